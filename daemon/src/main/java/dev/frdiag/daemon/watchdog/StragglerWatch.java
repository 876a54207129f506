package dev.frdiag.daemon.watchdog;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.Verdict;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the straggler analysis on each job's records every {@link DaemonSettings#stragglerInterval()} (never while a
 * hang's incident is open), and reports a straggler once: a report is stored when the analysis names ranks it has
 * not reported for the job, and the job counts as clear again after {@link #CLEAR_CHECKS} analyses in a row name
 * none (docs/DIAGNOSIS.md §13.5). Called from the watchdog's passes; the analysis runs on the analysis executor.
 */
final class StragglerWatch {
  private static final Logger log = LoggerFactory.getLogger(StragglerWatch.class);

  /** Analyses in a row that name no straggler before a job's straggler counts as gone. */
  static final int CLEAR_CHECKS = 3;

  private final Investigator investigator;
  private final DaemonSettings settings;
  private final LongSupplier nanoTime;
  // Concurrent: the watchdog's passes start analyses whose results arrive on the analysis threads.
  private final Map<String, State> jobs = new ConcurrentHashMap<>();

  /** One job's straggler watch; changed by one analysis at a time ({@code running}). */
  private static final class State {
    volatile long lastCheckNanos;
    volatile boolean running;
    volatile List<Integer> reported = List.of();
    volatile int clearChecks;

    State(long now) {
      lastCheckNanos = now;
    }
  }

  StragglerWatch(Investigator investigator, DaemonSettings settings, LongSupplier nanoTime) {
    this.investigator = investigator;
    this.settings = settings;
    this.nanoTime = nanoTime;
  }

  /** Starts an analysis of {@code job} when its interval has passed and none is running. */
  void check(Job job) {
    long interval = settings.stragglerInterval().toNanos();
    if (interval == 0 || job.incidentOpen()) {
      return;
    }
    long now = nanoTime.getAsLong();
    State s = jobs.computeIfAbsent(job.id(), id -> new State(now));
    if (s.running || now - s.lastCheckNanos < interval) {
      return;
    }
    s.running = true;
    s.lastCheckNanos = now;
    long started = nanoTime.getAsLong();
    investigator.stragglers(job, settings.stragglerWindow()).whenComplete((d, error) -> {
      try {
        if (error != null) {
          log.error("straggler analysis of job {} failed", job.id(), error);
        } else {
          found(job, s, d, (nanoTime.getAsLong() - started) / 1_000_000);
        }
      } finally {
        s.running = false;
      }
    });
  }

  private void found(Job job, State s, Diagnosis d, long tookMs) {
    if (d.verdict() != Verdict.SLOW) {
      if (!s.reported.isEmpty() && ++s.clearChecks >= CLEAR_CHECKS) {
        log.info("job {}: no straggler any more (ranks {} were)", job.id(), s.reported);
        s.reported = List.of();
      }
      return;
    }
    s.clearChecks = 0;
    if (d.culpritRanks().equals(s.reported) || job.incidentOpen()) {
      return;
    }
    s.reported = d.culpritRanks();
    investigator.reportStraggler(job, d, "analysed the records of " + d.lateness().ranks().size()
        + " ranks over the last " + settings.stragglerWindow().toSeconds() + " s in " + tookMs + " ms");
  }

  /** Forgets a job the registry expired. */
  void forget(String job) {
    jobs.remove(job);
  }
}
