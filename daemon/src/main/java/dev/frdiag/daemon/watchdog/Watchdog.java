package dev.frdiag.daemon.watchdog;

import dev.frdiag.daemon.DaemonSettings;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.report.Report;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Looks at every job periodically and opens one incident per hang: a stalled process group, a lost rank, or a
 * rank that reported a timeout or error. Observe-only: it reports, it never touches the job.
 */
public final class Watchdog implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Watchdog.class);

  private final JobRegistry registry;
  private final Investigator investigator;
  private final DaemonSettings settings;
  private final LongSupplier nanoTime;
  private final ScheduledExecutorService scheduler;
  // Concurrent: the scheduler's passes and a caller's checkAll() may overlap.
  private final Map<String, Long> incidentOpenedAt = new ConcurrentHashMap<>();
  /** Jobs whose evidence was built ahead in their current approach to the stall timeout. */
  private final Set<String> preparedAhead = ConcurrentHashMap.newKeySet();

  /** How soon the watchdog looks again while a group nears the stall timeout. */
  static final Duration NEAR_STALL_CHECK = Duration.ofMillis(100);

  public Watchdog(JobRegistry registry, Investigator investigator, DaemonSettings settings, LongSupplier nanoTime,
      ScheduledExecutorService scheduler) {
    this.registry = registry;
    this.investigator = investigator;
    this.settings = settings;
    this.nanoTime = nanoTime;
    this.scheduler = scheduler;
  }

  public void start() {
    schedule(settings.checkInterval());
  }

  private void schedule(Duration delay) {
    try {
      scheduler.schedule(this::pass, delay.toNanos(), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // Closed: no more passes.
    }
  }

  private void pass() {
    Duration next = settings.checkInterval();
    try {
      next = checkAll();
    } catch (RuntimeException e) {
      log.error("watchdog pass failed; the next one runs as planned", e);
    } finally {
      schedule(next);
    }
  }

  /**
   * One pass over every job; tests drive it directly, with their own clock. Returns when to look next: the check
   * interval, or {@link #NEAR_STALL_CHECK} while some job's quietest group is within one interval of the stall
   * timeout, so that a stall is seen within a tenth of a second of the heartbeat that completes it rather than up
   * to a whole interval later (a pass at 16,384 ranks takes some 20 ms, and this happens only as a hang begins).
   * Once per such approach, the job's evidence is built ahead on the analysis thread (DIAGNOSIS.md §3, "Evidence
   * built ahead"), so that the incident, if it comes, does not wait for it.
   */
  Duration checkAll() {
    Duration interval = settings.checkInterval();
    Duration next = interval;
    for (String expired : registry.expireIdle(nanoTime.getAsLong())) {
      incidentOpenedAt.remove(expired);
      preparedAhead.remove(expired);
      log.info("job {}: forgotten after {} with no rank connected (its reports stay in the store)", expired,
          settings.limits().jobIdleExpiry());
    }
    for (Job job : registry.all()) {
      try {
        check(job);
        long quiet = job.quietAtLastCheckNanos();
        if (quiet >= 0 && settings.stallTimeout().toNanos() - quiet <= interval.toNanos()) {
          next = NEAR_STALL_CHECK.compareTo(interval) < 0 ? NEAR_STALL_CHECK : interval;
          if (preparedAhead.add(job.id())) {
            investigator.prepareEvidence(job);
          }
        } else {
          preparedAhead.remove(job.id());
        }
      } catch (RuntimeException e) {
        // One job's bad state must not stop the watchdog for the others.
        log.error("watchdog check failed for job {}", job.id(), e);
      }
    }
    return next;
  }

  private void check(Job job) {
    long now = nanoTime.getAsLong();
    Long openedAt = incidentOpenedAt.get(job.id());
    if (openedAt != null) {
      job.closeIncidentIfRecovered(openedAt);
      job.closeIncidentAfterReport(now, settings.stallTimeout());
      if (!job.incidentOpen()) {
        incidentOpenedAt.remove(job.id());
        log.info("job {}: incident closed (progress resumed, or its report is out and the job went quiet)",
            job.id());
      }
      return;
    }
    Report.Trigger trigger = job.incidentTrigger(now, settings.stallTimeout(), settings.heartbeatTimeout(),
        settings.lostGrace());
    if (trigger == null) {
      return;
    }
    job.openIncident(trigger);
    incidentOpenedAt.put(job.id(), now);
    log.warn("incident opened job={} trigger={}", job.id(), trigger);
    investigator.investigate(job, trigger, settings.snapshotDeadline()).whenComplete((report, error) -> {
      job.incidentReported(nanoTime.getAsLong());
      if (error != null) {
        log.error("investigation of job {} failed", job.id(), error);
      }
    });
  }

  @Override
  public void close() {
    scheduler.shutdownNow();
  }
}
