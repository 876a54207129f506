package dev.frdiag.daemon.watchdog;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.Stragglers;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.Verdict;
import java.util.List;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the straggler analysis on each job's records every {@link DaemonSettings#stragglerInterval()} (never while a
 * hang's incident is open), and reports a straggler once, as the job's {@link Stragglers} watch decides
 * (docs/DIAGNOSIS.md §13.5). Called from the watchdog's passes; the analysis runs on the analysis executor. Keeps no
 * state of any job.
 */
final class StragglerWatch {
  private static final Logger log = LoggerFactory.getLogger(StragglerWatch.class);

  private final Investigator investigator;
  private final DaemonSettings settings;
  private final LongSupplier nanoTime;

  StragglerWatch(Investigator investigator, DaemonSettings settings, LongSupplier nanoTime) {
    this.investigator = investigator;
    this.settings = settings;
    this.nanoTime = nanoTime;
  }

  /** Starts an analysis of {@code job} when its interval has passed and none is running. */
  void check(Job job) {
    Stragglers watch = job.stragglers();
    long started = nanoTime.getAsLong();
    if (!watch.startAnalysis(started, settings.stragglerInterval())) {
      return;
    }
    investigator.stragglers(job, settings.stragglerWindow()).whenComplete((d, error) -> {
      if (error != null) {
        watch.failed();
        log.error("straggler analysis of job {} failed", job.id(), error);
        return;
      }
      List<Integer> report = watch.analysed(d.verdict() == Verdict.SLOW ? d.culpritRanks() : List.of());
      if (!report.isEmpty()) {
        investigator.reportStraggler(job, d, "analysed the records of " + d.lateness().ranks().size()
            + " ranks over the last " + settings.stragglerWindow().toSeconds() + " s in "
            + (nanoTime.getAsLong() - started) / 1_000_000 + " ms");
      }
    });
  }
}
