package dev.frdiag.analysis;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Shape;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A small synthetic hang shaped like a live job, which the daemon rehearses at start so the incident path is compiled
 * before the first real incident, which would otherwise pay for the JIT (seconds, at a thousand ranks) exactly when
 * an answer is wanted.
 */
public final class Warmup {
  private Warmup() {}

  /**
   * {@code ranks} ranks (a multiple of 8) in tensor-parallel groups of 4, pipeline pairs (rank r and r^4) that
   * send and receive, and a world group, each with its progress counters and a two-frame stack, as live ranks
   * report them: code compiled on a job without one of these would be thrown away and compiled again on the first
   * real one that has it. Rank 1's device stalls at the last step.
   */
  public static JobEvidence syntheticStall(int ranks, int steps) {
    List<RankEvidence> out = new ArrayList<>(ranks);
    int[] world = new int[ranks];
    for (int r = 0; r < ranks; r++) {
      world[r] = r;
    }
    Map<Integer, Frame> frames = Map.of(
        1, Frame.newBuilder().setName("train_step").setFilename("train.py").setLine(120).build(),
        2, Frame.newBuilder().setName("all_gather_into_tensor").setFilename("distributed_c10d.py").setLine(3800)
            .build());
    for (int r = 0; r < ranks; r++) {
      int base = r / 4 * 4;
      int[] tp = {base, base + 1, base + 2, base + 3};
      int peer = r ^ 4;
      int[] pp = {Math.min(r, peer), Math.max(r, peer)};
      String tpName = "tp" + base / 4;
      String ppName = "pp" + pp[0];
      List<ProcessGroup> groups = List.of(group("0", world), group(tpName, tp), group(ppName, pp));
      List<CollectiveRecord> records = new ArrayList<>();
      for (int step = 1; step <= steps; step++) {
        boolean last = step == steps;
        CollectiveState tpState = !last ? CollectiveState.COMPLETED
            : r == 1 ? CollectiveState.SCHEDULED : CollectiveState.STARTED;
        CollectiveState queued = last ? CollectiveState.SCHEDULED : CollectiveState.COMPLETED;
        records.add(record(r, records.size(), tpName, tp, step, "_all_gather_base", 256, 1024, tpState, step));
        records.add(record(r, records.size(), "0", world, step, "all_reduce", 1, 1, queued, step));
        records.add(record(r, records.size(), ppName, pp, 0, r < peer ? "send" : "recv", 64, 64, queued, step)
            .toBuilder().setIsP2P(true).setP2PSeq(step).setPeer(peer)
            .setCommsId(CommsId.of(ppName, step, true, CommsId.layoutOf(pp))).build());
      }
      List<ProcessGroupProgress> progress = List.of(progress(tpName, steps, r == 1 ? steps - 1 : steps, steps - 1,
          0, 0), progress("0", steps, steps - 1, steps - 1, 0, 0), progress(ppName, 0, -1, 0, steps, steps - 1));
      out.add(new RankEvidence(r, RankIdentity.newBuilder().setGlobalRank(r).setWorldSize(ranks)
          .setHostname("warmup" + r / 8).build(), Liveness.ALIVE, true, "", groups, records, progress, List.of(),
          frames));
    }
    return new JobEvidence("warmup", ranks, out, steps * 1_000_000L + 60_000_000_000L, Duration.ofSeconds(1));
  }

  private static ProcessGroupProgress progress(String group, long enqueued, long started, long completed,
      long p2pEnqueued, long p2pCompleted) {
    return ProcessGroupProgress.newBuilder().setProcessGroup(group).setLastEnqueuedSeq(enqueued)
        .setLastStartedSeq(started).setLastCompletedSeq(completed).setLastEnqueuedP2PSeq(p2pEnqueued)
        .setLastCompletedP2PSeq(p2pCompleted).setLastProgressNs(1_000_000L).build();
  }

  private static ProcessGroup group(String name, int[] ranks) {
    CommsId.GroupLayout layout = CommsId.layoutOf(ranks);
    ProcessGroup.Builder b = ProcessGroup.newBuilder().setName(name).setGlobalRankStart(layout.start())
        .setGlobalRankStride(layout.stride());
    for (int r : ranks) {
      b.addRanks(r);
    }
    return b.build();
  }

  private static CollectiveRecord record(int rank, int id, String pg, int[] members, long seq, String op, long in,
      long out, CollectiveState state, long time) {
    return CollectiveRecord.newBuilder().setRecordId(id).setProcessGroup(pg).setCollectiveSeq(seq).setOp(op)
        .setPeer(-1).addInputSizes(Shape.newBuilder().addDims(in)).addOutputSizes(Shape.newBuilder().addDims(out))
        .addInputDtypes("BFloat16").addOutputDtypes("BFloat16").setState(state)
        .setTimeCreatedNs(time * 1_000_000 + rank)
        .setTimeStartedNs(state == CollectiveState.SCHEDULED ? 0 : time * 1_000_000 + 10)
        .setTimeCompletedNs(state == CollectiveState.COMPLETED ? time * 1_000_000 + 20 : 0)
        .setCommsId(CommsId.of(pg, seq, false, CommsId.layoutOf(members))).setThreadName("pt_main_thread")
        .addFrameIds(1).addFrameIds(2).build();
  }
}
