package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;

/**
 * When a record's work has ended, by what its backend records. ProcessGroupNCCL's watchdog moves an entry to
 * started and completed from its CUDA events and retires it when it completes or times out, so there a retired
 * entry that is not completed has failed (FlightRecorder.hpp: "a retired but not completed event has timed out").
 * ProcessGroupGloo has no such events: its entries stay {@code scheduled} with no discovered times, and
 * {@code retired} is the only mark that the work left the work list, successfully or not (measured on PyTorch
 * 2.13.0+cpu: a collective that failed on a dead peer or a timeout ends retired too). Its {@code pg_status} tells
 * them apart in one direction: a record retired above {@code last_completed_collective} failed (measured on
 * 2.13.0+cpu: in 240 dumps of healthy and hung jobs no retired record is above it; in every DDP job whose peer died
 * or raised, the last bucket all_reduce that failed is). Not the other: the first of two bucket all_reduces failing
 * together is at it.
 */
final class Completion {
  private Completion() {}

  /** True for a backend whose records never leave {@code scheduled}: gloo. */
  static boolean statesNeverAdvance(CollectiveRecord r) {
    return r.getBackend().equals("gloo");
  }

  /** The work has ended: completed, or retired on a backend that records no completion. */
  static boolean ended(CollectiveRecord r) {
    return r.getState() == CollectiveState.COMPLETED || r.getRetired() && statesNeverAdvance(r);
  }

  /** Ended only by leaving the work list: completed or failed, the record cannot say which. */
  static boolean retiredUnknown(CollectiveRecord r) {
    return r.getState() != CollectiveState.COMPLETED && r.getRetired() && statesNeverAdvance(r);
  }

  /**
   * Not ended on a backend whose calling thread runs the work itself: gloo's collectives and the thread that
   * waits on them are inside it (blocked on the peers), which is not a device that never started it.
   */
  static boolean inside(CollectiveRecord r) {
    return !ended(r) && statesNeverAdvance(r);
  }
}
