package dev.frdiag.daemon.store;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.report.Report;
import java.util.ArrayDeque;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reports the disk refused, kept in memory in the order they came until the {@link ReportStore} can write them:
 * at most {@link #MAX_PENDING}, the oldest given up (and said so) beyond that. Thread-safe.
 */
final class PendingReports {
  // The store's logger, so these lines keep the name they were always logged under.
  private static final Logger log = LoggerFactory.getLogger(ReportStore.class);
  /** Reports kept in memory while the disk refuses them; beyond this the oldest is given up. */
  static final int MAX_PENDING = 1000;

  /** A report that is written but not yet on disk, and who to tell when it is. */
  record Pending(Report report, Consumer<Report> onDurable) {}

  private final Object lock = new Object();
  @GuardedBy("lock")
  private final ArrayDeque<Pending> pending = new ArrayDeque<>();

  /** Queues {@code report} when others wait already, so that reports land in order; false when none waits. */
  boolean queueBehindOthers(Report report, Consumer<Report> onDurable) {
    synchronized (lock) {
      if (pending.isEmpty()) {
        return false;
      }
      enqueue(new Pending(report, onDurable));
      return true;
    }
  }

  /** Queues {@code report}, which the disk just refused. */
  void add(Report report, Consumer<Report> onDurable) {
    synchronized (lock) {
      enqueue(new Pending(report, onDurable));
    }
  }

  /** The report that has waited longest; null when none waits. */
  Pending oldest() {
    synchronized (lock) {
      return pending.peekFirst();
    }
  }

  /** Forgets {@code p}, which is on disk now. */
  void written(Pending p) {
    synchronized (lock) {
      pending.remove(p);
    }
  }

  /** Reports waiting. */
  int size() {
    synchronized (lock) {
      return pending.size();
    }
  }

  @GuardedBy("lock")
  private void enqueue(Pending p) {
    if (pending.size() >= MAX_PENDING) {
      Pending dropped = pending.removeFirst();
      log.error("giving up report {} (job {}, verdict {}): {} reports are waiting for the disk already",
          dropped.report().reportId(), dropped.report().job(), dropped.report().verdict(), MAX_PENDING);
    }
    pending.addLast(p);
  }
}
