package dev.frdiag.testing.sim;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.ring.RecordView;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import java.util.ArrayList;
import java.util.List;

/** Reads a recorder the way the reporter does, for assertions. */
public final class Records {
  private Records() {}

  /** Every record still in the ring, oldest first. */
  public static List<CollectiveRecord> all(FlightRecorder recorder) {
    RecordView view = new RecordView();
    List<CollectiveRecord> out = new ArrayList<>();
    long next = recorder.nextRecordId();
    for (long id = Math.max(0, next - recorder.capacity()); id < next; id++) {
      if (recorder.read(id, view)) {
        out.add(recorder.toProto(view));
      }
    }
    return out;
  }

  /** The records of one process group still in the ring, oldest first. */
  public static List<CollectiveRecord> ofGroup(FlightRecorder recorder, String group) {
    return all(recorder).stream().filter(r -> r.getProcessGroup().equals(group)).toList();
  }

  /** The collective records (members and end marker) of {@code group} at collective_seq {@code seq}. */
  static List<CollectiveRecord> atSeq(FlightRecorder recorder, String group, long seq) {
    return ofGroup(recorder, group).stream().filter(r -> !r.getIsP2P() && r.getCollectiveSeq() == seq).toList();
  }

  /** The one non-marker collective record of {@code group} at {@code seq}. */
  static CollectiveRecord collective(FlightRecorder recorder, String group, long seq) {
    List<CollectiveRecord> found = atSeq(recorder, group, seq).stream()
        .filter(r -> !r.getOp().equals("coalesced")).toList();
    if (found.size() != 1) {
      throw new AssertionError("expected one record of " + group + " at seq " + seq + ", found " + found);
    }
    return found.get(0);
  }

  static CollectiveState state(FlightRecorder recorder, String group, long seq) {
    return collective(recorder, group, seq).getState();
  }

  static ProcessGroupProgress progress(FlightRecorder recorder, String group) {
    return recorder.progress().stream().filter(p -> p.getProcessGroup().equals(group)).findFirst()
        .orElseThrow(() -> new AssertionError("no progress for group " + group));
  }
}
