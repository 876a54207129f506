package dev.frdiag.daemon.analysis;

import static dev.frdiag.proto.v1.CollectiveState.COMPLETED;
import static dev.frdiag.proto.v1.CollectiveState.SCHEDULED;
import static dev.frdiag.proto.v1.CollectiveState.STARTED;
import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class HangAnalyzerTest {

  /** 8 ranks: tensor-parallel pairs tp0..tp3, data-parallel groups dpA (even) and dpB (odd). */
  private static Snapshots job() {
    return new Snapshots(8).group("tp0", 0, 1).group("tp1", 2, 3).group("tp2", 4, 5).group("tp3", 6, 7)
        .group("dpA", 0, 2, 4, 6).group("dpB", 1, 3, 5, 7);
  }

  private static Snapshots healthySteps(Snapshots s, int steps) {
    for (int i = 0; i < steps; i++) {
      for (String tp : List.of("tp0", "tp1", "tp2", "tp3")) {
        s.all(tp, "_all_gather_base", COMPLETED);
      }
      s.all("dpA", "all_reduce", COMPLETED).all("dpB", "all_reduce", COMPLETED).all("0", "all_reduce", COMPLETED);
    }
    return s;
  }

  @Test
  void reportsRankThatNeverIssuedTheCollectiveAsCpuStall() {
    Snapshots s = healthySteps(job(), 3);
    s.only("tp2", "_all_gather_base", STARTED, 4);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.verdict()).isEqualTo(Verdict.HANG);
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(5);
    assertThat(d.collective().processGroup()).isEqualTo("tp2");
    assertThat(d.collective().seq()).isEqualTo(4);
    assertThat(d.culpritHosts()).containsExactly("node1");
    assertThat(d.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo("not_issued");
      assertThat(e.ranks()).containsExactly(5);
      assertThat(e.detail()).contains("last issued on tp2 is seq 3");
    });
  }

  @Test
  void reportsRankWhoseDeviceNeverStartedAsGpuStall() {
    Snapshots s = healthySteps(job(), 3);
    s.only("tp1", "_all_gather_base", STARTED, 2).only("tp1", "_all_gather_base", SCHEDULED, 3);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(3);
    assertThat(d.evidence().get(0).kind()).isEqualTo("not_started");
  }

  @Test
  void cudaErrorMakesTheGpuStallCertain() {
    Snapshots s = healthySteps(job(), 2);
    s.only("tp1", "_all_gather_base", STARTED, 2).only("tp1", "_all_gather_base", SCHEDULED, 3)
        .event(3, RankEvent.Kind.CUDA_ERROR);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(3);
    assertThat(d.confidence()).isGreaterThan(0.9);
  }

  @Test
  void everyMemberStartedNoneCompletedIsFabricWithoutARank() {
    Snapshots s = healthySteps(job(), 2);
    s.all("0", "all_reduce", STARTED);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.FABRIC);
    assertThat(d.culpritRanks()).isEmpty();
    assertThat(d.collective().processGroup()).isEqualTo("0");
  }

  @Test
  void sizeMismatchNamesTheMinorityRank() {
    Snapshots s = healthySteps(job(), 2);
    s.issue(0, "dpA", "all_reduce", STARTED, 1024, "Float").issue(2, "dpA", "all_reduce", STARTED, 1024, "Float")
        .issue(4, "dpA", "all_reduce", STARTED, 512, "Float").issue(6, "dpA", "all_reduce", STARTED, 1024, "Float");
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(d.culpritRanks()).containsExactly(4);
    assertThat(d.evidence().get(0).detail()).contains("rank 4 issued all_reduce(in=[[512]]");
  }

  @Test
  void dtypeMismatchInATwoRankGroupBlamesTheRankThatChanged() {
    Snapshots s = healthySteps(job(), 2);
    s.issue(6, "tp3", "_all_gather_base", STARTED, 1024, "Float")
        .issue(7, "tp3", "_all_gather_base", STARTED, 1024, "BFloat16");
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(d.culpritRanks()).containsExactly(7);
  }

  @Test
  void lostRankIsDeadNotCpuStalled() {
    Snapshots s = healthySteps(job(), 2).only("tp0", "_all_gather_base", STARTED, 0).lost(1);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.DEAD_RANK);
    assertThat(d.culpritRanks()).containsExactly(1);
  }

  @Test
  void rankThatAnswersWithNothingOutstandingIsAliveAndCpuStalled() {
    Snapshots s = healthySteps(job(), 2).only("tp0", "_all_gather_base", STARTED, 0);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(1);
  }

  @Test
  void rankThatSentNoSnapshotAndNoRecordsIsTreatedAsGone() {
    Snapshots s = healthySteps(job(), 2).only("tp0", "_all_gather_base", STARTED, 0).unanswered(1);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.DEAD_RANK);
    assertThat(d.culpritRanks()).containsExactly(1);
  }

  @Test
  void cascadeAcrossGroupsNamesTheRootNotTheWaiters() {
    // Rank 5 never issues its tp2 gather; rank 4 waits in it. Everyone else reaches the data-parallel
    // all_reduce, where rank 4 (queued behind tp2) and 5 (never got there) are missing.
    Snapshots s = healthySteps(job(), 3);
    s.only("tp2", "_all_gather_base", STARTED, 4);
    for (String tp : List.of("tp0", "tp1", "tp3")) {
      s.all(tp, "_all_gather_base", COMPLETED);
    }
    s.only("dpA", "all_reduce", STARTED, 0, 2, 6).only("dpA", "all_reduce", SCHEDULED, 4)
        .only("dpB", "all_reduce", STARTED, 1, 3, 7);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(5);
    assertThat(d.collective().processGroup()).isEqualTo("tp2");
    assertThat(d.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo("cascade");
      assertThat(e.detail()).contains("dpA#4 all_reduce");
    });
    assertThat(d.stuck().get(0).rootCause()).isTrue();
    assertThat(d.stuck().stream().filter(c -> c.collective().processGroup().equals("dpA")))
        .allSatisfy(c -> assertThat(c.rootCause()).isFalse());
  }

  @Test
  void pipelineSendWhoseRecvNeverComesBlamesTheReceiver() {
    Snapshots s = new Snapshots(2).group("pp", 0, 1);
    s.all("pp", "send", COMPLETED);
    s.only("pp", "send", STARTED, 0);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(1);
    assertThat(d.collective().isP2p()).isTrue();
    assertThat(d.collective().seq()).isEqualTo(2);
  }

  @Test
  void twoCulpritsAtOnceAreBothNamed() {
    Snapshots s = healthySteps(job(), 2).only("tp0", "_all_gather_base", STARTED, 0)
        .only("tp3", "_all_gather_base", STARTED, 7);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(1, 6);
  }

  @Test
  void wrappedRingsThatDoNotStartAtSeqOneStillMatch() {
    Snapshots s = healthySteps(job(), 6).only("tp2", "_all_gather_base", STARTED, 4);
    // Each rank issues 3 records per step: dropping 10 leaves seqs that start mid-run on every rank.
    Diagnosis d = HangAnalyzer.analyze(s.wrap(10).offline());
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(5);
    assertThat(d.collective().seq()).isEqualTo(7);
  }

  @Test
  void slowButProgressingIsNoHang() {
    Snapshots s = healthySteps(job(), 3);
    s.all("0", "all_reduce", STARTED);
    // Observed 200 ms after the newest op with a 1 s threshold: in flight, not stuck.
    Diagnosis d = HangAnalyzer.analyze(s.liveAfter(Duration.ofMillis(200)));
    assertThat(d.verdict()).isEqualTo(Verdict.NO_HANG);
    assertThat(d.symptom()).isEqualTo(Symptom.NONE);
    assertThat(HangAnalyzer.analyze(s.liveAfter(Duration.ofSeconds(5))).verdict()).isEqualTo(Verdict.HANG);
  }

  @Test
  void allIssuedNoneStartedWithoutStartEventsIsInsufficientEvidence() {
    Snapshots s = new Snapshots(2);
    s.all("0", "all_reduce", SCHEDULED);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(d.headline()).contains("TORCH_NCCL_ENABLE_TIMING");
  }

  @Test
  void theResultIsTheSameForEveryOrderOfRankInputs() {
    Snapshots s = healthySteps(job(), 3);
    s.only("tp2", "_all_gather_base", STARTED, 4);
    s.only("dpA", "all_reduce", STARTED, 0, 2, 6).only("dpA", "all_reduce", SCHEDULED, 4);
    JobEvidence base = s.offline();
    Diagnosis expected = HangAnalyzer.analyze(base);
    Random random = new Random(42);
    for (int i = 0; i < 50; i++) {
      List<RankEvidence> shuffled = new ArrayList<>(base.ranks());
      Collections.shuffle(shuffled, random);
      Diagnosis d = HangAnalyzer.analyze(new JobEvidence("t", 8, shuffled, 0, Duration.ofSeconds(1)));
      assertThat(d).isEqualTo(expected);
    }
  }
}
