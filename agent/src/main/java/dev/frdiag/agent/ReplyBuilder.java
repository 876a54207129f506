package dev.frdiag.agent;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.InternedFrame;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RecordBatch;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Turns a dump into what the daemon is sent: record batches that keep its window current, or one reply to a dump
 * request. Each message carries the stack frames its records use, and stays under the daemon's message limit.
 */
final class ReplyBuilder {
  /** Largest reply the agent sends, under the daemon's default message limit of 4 MiB; oldest records go first. */
  static final int MAX_REPLY_BYTES = 3 << 20;

  private ReplyBuilder() {}

  /** The dump's records in batches of at most {@code batchSize}, oldest first, each given to {@code sink}. */
  static void batches(FlightRecorderDump dump, int batchSize, Consumer<RecordBatch.Builder> sink) {
    List<CollectiveRecord> records = dump.records();
    for (int from = 0; from < records.size(); from += batchSize) {
      RecordBatch.Builder batch = RecordBatch.newBuilder();
      Set<Integer> frames = new HashSet<>();
      for (CollectiveRecord r : records.subList(from, Math.min(records.size(), from + batchSize))) {
        batch.addRecords(r);
        frames.addAll(r.getFrameIdsList());
      }
      addFrames(dump, frames, batch::addFrames);
      sink.accept(batch);
    }
  }

  /**
   * The dump as one reply without a request id; when larger than {@code maxBytes}, its oldest records are left
   * out and counted in {@link DumpReply#getDroppedRecords()}.
   */
  static DumpReply reply(FlightRecorderDump dump, int maxBytes) {
    List<CollectiveRecord> records = dump.records();
    int budget = maxBytes;
    for (ProcessGroupProgress p : dump.progress()) {
      budget -= p.getSerializedSize() + 8;
    }
    Set<Integer> frames = new HashSet<>();
    int first = records.size();
    while (first > 0) {
      CollectiveRecord r = records.get(first - 1);
      int cost = r.getSerializedSize() + 8;
      for (int id : r.getFrameIdsList()) {
        Frame f = frames.contains(id) ? null : dump.frames().get(id);
        cost += f == null ? 0 : f.getSerializedSize() + 16;
      }
      if (cost > budget) {
        break;
      }
      budget -= cost;
      frames.addAll(r.getFrameIdsList());
      first--;
    }
    DumpReply.Builder b = DumpReply.newBuilder().addAllRecords(records.subList(first, records.size()))
        .addAllProgress(dump.progress()).setDroppedRecords(first);
    addFrames(dump, frames, b::addFrames);
    return b.build();
  }

  private static void addFrames(FlightRecorderDump dump, Set<Integer> ids, Consumer<InternedFrame> sink) {
    for (int id : ids) {
      Frame f = dump.frames().get(id);
      if (f != null) {
        sink.accept(InternedFrame.newBuilder().setId(id).setFrame(f).build());
      }
    }
  }
}
