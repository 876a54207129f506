package dev.frdiag.daemon.watchdog;

import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.registry.Incident;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.registry.Stragglers;
import dev.frdiag.report.Report;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Looks at every job periodically and opens one incident per hang: a stalled process group, a lost rank, or a
 * rank that reported a timeout or error. A stateless scan: what it decides lives in each job's {@link Incident} and
 * {@link Stragglers} watch. Observe-only: it reports, it never touches the job.
 */
public final class Watchdog implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Watchdog.class);

  private final JobRegistry registry;
  private final Investigator investigator;
  private final DaemonSettings settings;
  private final LongSupplier nanoTime;
  private final LongSupplier intakeLagNanos;
  private final ScheduledExecutorService scheduler;
  private final StragglerWatch stragglers;
  /** Whether the last pass found the intake behind by more than a heartbeat interval (said once per spell). */
  private volatile boolean intakeBehind;

  /** How soon the watchdog looks again while a group nears the stall timeout. */
  static final Duration NEAR_STALL_CHECK = Duration.ofMillis(100);
  /**
   * How many check intervals before the stall timeout a job's evidence is built ahead: two, so that the collections
   * that move the built records to the old generation are over before the incident's analysis runs.
   */
  static final int BUILD_AHEAD_INTERVALS = 2;

  /**
   * @param intakeLagNanos how long the messages the daemon has not read yet have waited (the transport's
   *     {@code IntakeExecutor}): silence is judged only up to the moment the daemon has read everything before
   */
  public Watchdog(JobRegistry registry, Investigator investigator, DaemonSettings settings, LongSupplier nanoTime,
      LongSupplier intakeLagNanos, ScheduledExecutorService scheduler) {
    this.intakeLagNanos = intakeLagNanos;
    this.registry = registry;
    this.investigator = investigator;
    this.settings = settings;
    this.nanoTime = nanoTime;
    this.scheduler = scheduler;
    this.stragglers = new StragglerWatch(investigator, settings, nanoTime);
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
   * Once per approach to within {@link #BUILD_AHEAD_INTERVALS} intervals, the job's evidence is built ahead on the
   * analysis thread (DIAGNOSIS.md §3, "Evidence built ahead"), so that the incident, if it comes, does not wait for
   * it.
   */
  Duration checkAll() {
    Duration interval = settings.checkInterval();
    Duration next = interval;
    long lag = intakeLag();
    for (String expired : registry.expireIdle(nanoTime.getAsLong())) {
      log.info("job {}: forgotten after {} with no rank connected (its reports stay in the store)", expired,
          settings.limits().jobIdleExpiry());
    }
    for (Job job : registry.all()) {
      try {
        check(job, lag);
        stragglers.check(job);
        long quiet = job.incident().quietAtLastCheckNanos();
        long untilStall = settings.stallTimeout().toNanos() - quiet;
        if (quiet >= 0 && untilStall <= interval.toNanos()) {
          next = NEAR_STALL_CHECK.compareTo(interval) < 0 ? NEAR_STALL_CHECK : interval;
        }
        if (job.incident().prepareAhead(quiet >= 0 && untilStall <= BUILD_AHEAD_INTERVALS * interval.toNanos())) {
          investigator.prepareEvidence(job);
        }
      } catch (RuntimeException e) {
        // One job's bad state must not stop the watchdog for the others.
        log.error("watchdog check failed for job {}", job.id(), e);
      }
    }
    return next;
  }

  /** The intake's lag now, said in the log when it passes a heartbeat interval and when it is back under it. */
  private long intakeLag() {
    long lag = intakeLagNanos.getAsLong();
    boolean behind = lag > settings.heartbeatInterval().toNanos();
    if (behind != intakeBehind) {
      intakeBehind = behind;
      if (behind) {
        log.warn("the daemon's intake is {} ms behind: ranks' messages wait that long to be read, and a rank's "
            + "silence is judged only up to then (the daemon is short of CPU or threads)", lag / 1_000_000);
      } else {
        log.info("the daemon's intake has caught up ({} ms behind)", lag / 1_000_000);
      }
    }
    return lag;
  }

  private void check(Job job, long intakeLag) {
    long now = nanoTime.getAsLong();
    Incident incident = job.incident();
    if (incident.isOpen()) {
      Incident.Closed closed = incident.closeIfOver(now, settings.stallTimeout());
      if (closed != null) {
        log.info("job {}: incident closed ({})", job.id(), closed.recovered() ? "the job moved again by itself"
            : "progress resumed after a restart, or its report is out and the job went quiet");
        if (closed.recovered() && closed.reportId() != null) {
          investigator.recovered(job, closed.reportId());
        }
      }
      return;
    }
    Report.Trigger trigger = incident.openIfDue(now, intakeLag, settings.stallTimeout(), settings.heartbeatTimeout(),
        settings.lostGrace());
    if (trigger == null) {
      return;
    }
    log.warn("incident opened job={} trigger={}", job.id(), trigger);
    investigator.investigate(job, trigger, settings.snapshotDeadline()).whenComplete((report, error) -> {
      incident.reported(nanoTime.getAsLong(), report == null ? null : report.reportId());
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
