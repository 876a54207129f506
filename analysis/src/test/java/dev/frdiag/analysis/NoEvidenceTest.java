package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Verdict;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A verdict rests on evidence present: ranks that sent nothing give no grounds for "no hang". */
class NoEvidenceTest {
  private static RankEvidence silent(int rank) {
    return new RankEvidence(rank, RankIdentity.newBuilder().setJobId("j").setGlobalRank(rank).setWorldSize(2)
        .setHostname("node0").build(), Liveness.ALIVE, false, "no dump within 5000 ms",
        List.of(ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1).setGlobalRankStride(1).build()),
        List.of(), List.of(), List.of(), Map.of(), RankEvidence.Source.RECORDS);
  }

  @Test
  void ranksThatSentNoRecordsNoProgressAndNoEventsAreInsufficientEvidenceNotNoHang() {
    Diagnosis d = HangAnalyzer.analyze(new JobEvidence("j", 2, List.of(silent(0), silent(1)), 0,
        Duration.ofSeconds(30), List.of()));
    assertThat(d.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(d.confidence()).isLessThanOrEqualTo(0.3);
  }
}
