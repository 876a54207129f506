package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.Liveness;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Rings that wrapped in the middle of a coalesced group. With 24 entries per rank, every rank's ring starts
 * after the first all_reduce of a coalesced gradient group, so it holds the group's second all_reduce and end
 * marker only. Rank 35 stalled one step before its peers, so its ring holds that same group whole, the one its
 * peers hold cut.
 */
class WrappedRingsTest {
  private static final Hangs.Case CUT = Hangs.job(64, 24, Kind.CPU_STALL, 35);

  @TempDir
  Path dir;

  @Test
  void aCoalescedGroupTheRingCutIsNotTakenForAMismatch() {
    FaultyDumps job = Hangs.write(CUT, dir, Encoding.PICKLE);
    FlightRecorderDump peer = job.dump(39).orElseThrow();
    assertThat(peer.records().get(1).getOp()).isEqualTo("coalesced");
    Hangs.assertDiagnosed(job, dir);
  }

  /**
   * The engine on the same rings as they are, without the offline reading's dropping of the cut op: the live
   * path (a daemon pulling rings) gives it exactly such rings.
   */
  @Test
  void theEngineDoesNotTakeACoalescedGroupTheRingCutForAMismatch() {
    FaultyDumps job = CUT.build();
    List<RankEvidence> ranks = new ArrayList<>();
    for (int rank = 0; rank < job.worldSize(); rank++) {
      ranks.add(rawEvidence(job.dump(rank).orElseThrow(), job.worldSize()));
    }
    Diagnosis d = HangAnalyzer.analyze(new JobEvidence("wrapped", job.worldSize(), ranks, 0, Duration.ofSeconds(1)));
    assertThat(d.symptom()).as(d.headline()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(35);
  }

  /** A dump as evidence, every record kept; pg_status of pipeline groups counts P2P seqs, as PyTorch's does. */
  private static RankEvidence rawEvidence(FlightRecorderDump d, int world) {
    List<ProcessGroupProgress> progress = new ArrayList<>();
    for (ProcessGroupProgress p : d.progress()) {
      boolean p2p = d.processGroup(p.getProcessGroup()).getDesc().equals("PIPELINE_MODEL_PARALLEL_GROUP");
      progress.add(!p2p ? p : p.toBuilder().setLastEnqueuedSeq(-1).setLastStartedSeq(-1).setLastCompletedSeq(-1)
          .setLastEnqueuedP2PSeq(p.getLastEnqueuedSeq()).setLastCompletedP2PSeq(p.getLastCompletedSeq()).build());
    }
    List<CollectiveRecord> records = d.records();
    return new RankEvidence(d.rank(), RankIdentity.newBuilder().setGlobalRank(d.rank()).setWorldSize(world)
        .setLocalRank(-1).setCudaDevice(-1).build(), Liveness.UNKNOWN, true, "", d.processGroups(), records,
        progress, List.of(), Map.of());
  }
}
