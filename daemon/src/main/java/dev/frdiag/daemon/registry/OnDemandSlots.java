package dev.frdiag.daemon.registry;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The on-demand diagnoses running across every job, against the daemon's limit
 * ({@link dev.frdiag.daemon.settings.Limits#maxInvestigations()}): each gathers every rank's snapshot, and a burst of
 * callers must not make the daemon gather for every job at once. Thread-safe.
 */
final class OnDemandSlots {
  private final int max;
  private final AtomicInteger running = new AtomicInteger();

  OnDemandSlots(int max) {
    this.max = max;
  }

  /**
   * Takes a slot.
   *
   * @throws LimitExceededException when every slot is taken
   */
  void claim() {
    while (true) {
      int now = running.get();
      if (now >= max) {
        throw new LimitExceededException(now + " diagnoses are running, the daemon's limit; try again shortly");
      }
      if (running.compareAndSet(now, now + 1)) {
        return;
      }
    }
  }

  /** Gives a slot back. */
  void release() {
    running.decrementAndGet();
  }
}
