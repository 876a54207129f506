package dev.frdiag.daemon.registry;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One job's straggler watch (DIAGNOSIS.md §13.5): when its records were last analysed for a straggler, whether an
 * analysis runs, and which ranks were last reported, so that a straggler is reported once and counts as gone only
 * after {@link #CLEAR_CHECKS} analyses in a row name none. Never while the job's incident is open: a hang is not a
 * straggler. Thread-safe: every method holds the job's lock.
 */
public final class Stragglers {
  private static final Logger log = LoggerFactory.getLogger(Stragglers.class);

  /** Analyses in a row that name no straggler before a job's straggler counts as gone. */
  public static final int CLEAR_CHECKS = 3;

  private final String jobId;
  private final Object lock;
  private final Incident incident;
  /**
   * When the last analysis started (daemon monotonic time); the first is due an interval after the watch first looked,
   * which {@link #watching} tells.
   */
  @GuardedBy("lock")
  private long lastCheckNanos;
  @GuardedBy("lock")
  private boolean watching;
  @GuardedBy("lock")
  private boolean running;
  @GuardedBy("lock")
  private List<Integer> reported = List.of();
  @GuardedBy("lock")
  private int clearChecks;

  Stragglers(String jobId, Object lock, Incident incident) {
    this.jobId = jobId;
    this.lock = lock;
    this.incident = incident;
  }

  /**
   * Whether an analysis starts now: {@code interval} (zero: never) has passed since the last started, none runs, and
   * no incident is open. When true, the caller runs one and then says {@link #analysed} or {@link #failed} once.
   */
  public boolean startAnalysis(long nowNanos, Duration interval) {
    synchronized (lock) {
      if (!watching) {
        watching = true;
        lastCheckNanos = nowNanos;
      }
      if (interval.isZero() || running || incident.isOpen() || nowNanos - lastCheckNanos < interval.toNanos()) {
        return false;
      }
      running = true;
      lastCheckNanos = nowNanos;
      return true;
    }
  }

  /**
   * The analysis started by {@link #startAnalysis} named {@code culprits} as stragglers (empty: none, or it failed);
   * returns the ranks to report now: those culprits when they differ from the ranks reported last and no incident
   * opened meanwhile, else none.
   */
  public List<Integer> analysed(List<Integer> culprits) {
    synchronized (lock) {
      running = false;
      if (culprits.isEmpty()) {
        if (!reported.isEmpty() && ++clearChecks >= CLEAR_CHECKS) {
          log.info("job {}: no straggler any more (ranks {} were)", jobId, reported);
          reported = List.of();
        }
        return List.of();
      }
      clearChecks = 0;
      if (culprits.equals(reported) || incident.isOpen()) {
        return List.of();
      }
      reported = List.copyOf(culprits);
      return reported;
    }
  }

  /** The analysis started by {@link #startAnalysis} failed: it says nothing of the ranks. */
  public void failed() {
    synchronized (lock) {
      running = false;
    }
  }
}
