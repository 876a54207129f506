package dev.frdiag.analysis;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Shape;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Runs the analysis on a small synthetic hang so its code is compiled before the first real incident, which
 * would otherwise pay for the JIT (seconds, at a thousand ranks) exactly when an answer is wanted.
 */
public final class Warmup {
  private Warmup() {}

  /** Analyses a synthetic 64-rank GPU stall {@code rounds} times; returns the last diagnosis. */
  public static Diagnosis run(int rounds) {
    JobEvidence job = syntheticStall(64, 40);
    Diagnosis d = null;
    for (int i = 0; i < rounds; i++) {
      d = HangAnalyzer.analyze(job);
    }
    return d;
  }

  /** {@code ranks} ranks in groups of 4 plus a world group; rank 1's device stalls at the last step. */
  static JobEvidence syntheticStall(int ranks, int steps) {
    List<RankEvidence> out = new ArrayList<>(ranks);
    int[] world = new int[ranks];
    for (int r = 0; r < ranks; r++) {
      world[r] = r;
    }
    for (int r = 0; r < ranks; r++) {
      int base = r / 4 * 4;
      int[] tp = {base, base + 1, base + 2, base + 3};
      List<ProcessGroup> groups = List.of(group("0", world), group("tp" + base / 4, tp));
      List<CollectiveRecord> records = new ArrayList<>();
      for (int step = 1; step <= steps; step++) {
        boolean last = step == steps;
        CollectiveState tpState = !last ? CollectiveState.COMPLETED
            : r == 1 ? CollectiveState.SCHEDULED : CollectiveState.STARTED;
        records.add(record(r, records.size(), "tp" + base / 4, tp, step, "_all_gather_base", 256, 1024, tpState,
            step));
        records.add(record(r, records.size(), "0", world, step, "all_reduce", 1, 1,
            last ? CollectiveState.SCHEDULED : CollectiveState.COMPLETED, step));
      }
      out.add(new RankEvidence(r, RankIdentity.newBuilder().setGlobalRank(r).setWorldSize(ranks)
          .setHostname("warmup").build(), Liveness.ALIVE, true, "", groups, records, List.of(), List.of(),
          Map.of()));
    }
    return new JobEvidence("warmup", ranks, out, 0, Duration.ofSeconds(1));
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
        .setCommsId(CommsId.of(pg, seq, false, CommsId.layoutOf(members))).build();
  }
}
