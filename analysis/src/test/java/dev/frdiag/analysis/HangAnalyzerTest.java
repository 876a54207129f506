package dev.frdiag.analysis;

import static dev.frdiag.proto.v1.CollectiveState.COMPLETED;
import static dev.frdiag.proto.v1.CollectiveState.SCHEDULED;
import static dev.frdiag.proto.v1.CollectiveState.STARTED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.frdiag.proto.v1.ProcessGroupProgress;
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
      assertThat(e.kind()).isEqualTo(Evidence.Kind.NOT_ISSUED);
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
    assertThat(d.evidence().get(0).kind()).isEqualTo(Evidence.Kind.NOT_STARTED);
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
    // Both ranks issued Float gathers before: rank 7 is the one that changed.
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

  /**
   * Rank 5 never issues its tp2 gather; rank 4 waits in it. Everyone else in dpA reaches the data-parallel
   * all_reduce, where rank 4 (queued behind tp2) and 5 (never got there) are missing.
   */
  private static Snapshots cascadeBehindTp2() {
    Snapshots s = healthySteps(job(), 3);
    s.only("tp2", "_all_gather_base", STARTED, 4);
    for (String tp : List.of("tp0", "tp1", "tp3")) {
      s.all(tp, "_all_gather_base", COMPLETED);
    }
    return s.only("dpA", "all_reduce", STARTED, 0, 2, 6).only("dpA", "all_reduce", SCHEDULED, 4);
  }

  @Test
  void cascadeAcrossGroupsNamesTheRootNotTheWaiters() {
    Snapshots s = cascadeBehindTp2().only("dpB", "all_reduce", STARTED, 1, 3, 7);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(5);
    assertThat(d.collective().processGroup()).isEqualTo("tp2");
    assertThat(d.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.CASCADE);
      assertThat(e.detail()).contains("dpA#4 all_reduce");
    });
    assertThat(d.stuck().get(0).rootCause()).isTrue();
    assertThat(d.stuck().stream().filter(c -> c.collective().processGroup().equals("dpA")))
        .allSatisfy(c -> assertThat(c.rootCause()).isFalse());
  }

  @Test
  void picturesWhereEachMemberStandsAroundTheStuckSeqRootCausesFirst() {
    Snapshots s = cascadeBehindTp2();
    Diagnosis d = HangAnalyzer.analyze(s.offline());

    GroupProgress tp2 = d.progress().get(0);
    assertThat(tp2.collective().label()).isEqualTo("tp2#4 _all_gather_base");
    assertThat(tp2.rootCause()).isTrue();
    assertThat(tp2.firstSeq()).isEqualTo(1);
    assertThat(tp2.startsRecorded()).isTrue();
    // Seqs 1..6: both completed 1-3; rank 4 started 4, rank 5 (the culprit) never issued it.
    assertThat(tp2.rows()).extracting(GroupProgress.Row::ranks, GroupProgress.Row::cells, GroupProgress.Row::culprit)
        .containsExactly(tuple(List.of(4), "CCCSNN", false), tuple(List.of(5), "CCCNNN", true));
    GroupProgress dpA = d.progress().stream().filter(g -> g.collective().processGroup().equals("dpA")).findFirst()
        .orElseThrow();
    assertThat(dpA.rootCause()).isFalse();
    assertThat(dpA.rows()).filteredOn(r -> r.ranks().contains(4)).singleElement()
        .satisfies(r -> assertThat(r.cells().charAt((int) (dpA.collective().seq() - dpA.firstSeq()))).isEqualTo('I'));
  }

  @Test
  void aJobWithNothingStuckHasNoPicture() {
    Diagnosis d = HangAnalyzer.analyze(healthySteps(job(), 3).offline());
    assertThat(d.progress()).isEmpty();
  }

  @Test
  void pipelineSendWhoseRecvNeverComesBlamesTheReceiver() {
    Snapshots s = new Snapshots(2).group("pp", 0, 1);
    s.issue(0, "pp", "send", COMPLETED, 64, "Float").issue(1, "pp", "recv", COMPLETED, 64, "Float");
    s.issue(0, "pp", "send", STARTED, 64, "Float");
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
  void progressSeenInRecordsIsNoHangWithoutClaimingCertainty() {
    Diagnosis d = HangAnalyzer.analyze(healthySteps(job(), 3).offline());
    assertThat(d.verdict()).isEqualTo(Verdict.NO_HANG);
    assertThat(d.confidence()).isEqualTo(0.9);
  }

  @Test
  void aWatchdogTimeoutIsNeverNoHangEvenWhenNothingShowsWhereItIsStuck() {
    Snapshots s = healthySteps(job(), 3).event(2, RankEvent.Kind.WATCHDOG_TIMEOUT);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(d.symptom()).isEqualTo(Symptom.UNKNOWN);
    assertThat(d.confidence()).isLessThanOrEqualTo(0.4);
    assertThat(d.headline()).isEqualTo("Rank 2 timed out in a collective, but the evidence does not show which "
        + "member held it up.");
    assertThat(d.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.INSUFFICIENT);
      assertThat(e.ranks()).containsExactly(2);
      assertThat(e.detail()).startsWith("every rank's Flight Recorder dump");
    });
  }

  @Test
  void aRankReportingACudaErrorIsTheGpuCulpritWhenNothingElseShowsWhereTheJobIsStuck() {
    Snapshots s = healthySteps(job(), 3).event(2, RankEvent.Kind.WATCHDOG_TIMEOUT)
        .event(6, RankEvent.Kind.CUDA_ERROR);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.verdict()).isEqualTo(Verdict.HANG);
    assertThat(d.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(6);
    assertThat(d.confidence()).isEqualTo(0.7);
  }

  @Test
  void aStuckWatchdogWithNoTimeoutBeforeItIsWatchdogStuck() {
    Snapshots s = healthySteps(job(), 3).event(1, RankEvent.Kind.WATCHDOG_STUCK)
        .event(3, RankEvent.Kind.WATCHDOG_STUCK);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.verdict()).isEqualTo(Verdict.HANG);
    assertThat(d.symptom()).isEqualTo(Symptom.WATCHDOG_STUCK);
    assertThat(d.culpritRanks()).isEmpty();
    assertThat(d.confidence()).isEqualTo(0.4);
    assertThat(d.headline()).startsWith("The watchdog of ranks 1, 3 is stuck");
  }

  @Test
  void aTimeoutNoticedFarPastItsDeadlineMeansTheWatchdogHadStopped() {
    Snapshots s = healthySteps(job(), 3);
    s.event(4, RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_TIMEOUT).setSeq(12).build());
    s.event(4, RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_STUCK).setSeq(12).build());
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.verdict()).isEqualTo(Verdict.HANG);
    assertThat(d.symptom()).isEqualTo(Symptom.WATCHDOG_STUCK);
    assertThat(d.headline()).startsWith("The watchdog of rank 4 noticed its collective timeout far past");
  }

  @Test
  void aCudaErrorNamesTheCulpritWhereEveryMemberIssuedAndNoneStarted() {
    Snapshots s = new Snapshots(2);
    s.all("0", "all_reduce", SCHEDULED);
    s.event(1, RankEvent.Kind.CUDA_ERROR);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(1);
  }

  @Test
  void aStuckWatchdogAfterATimeoutIsASecondSymptomNotTheCause() {
    Snapshots s = healthySteps(job(), 3).event(2, RankEvent.Kind.WATCHDOG_TIMEOUT)
        .event(1, RankEvent.Kind.WATCHDOG_STUCK);
    assertThat(HangAnalyzer.analyze(s.offline()).verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
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

  @Test
  void coalescedGroupWhoseMembersDifferIsAMismatchOnTheOddRank() {
    Snapshots s = healthySteps(job(), 2);
    for (int r : new int[] {0, 2, 6}) {
      s.coalesced(r, "dpA", STARTED, 1024, "all_reduce", "all_reduce");
    }
    s.coalesced(4, "dpA", STARTED, 1024, "all_reduce");
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(d.culpritRanks()).containsExactly(4);
    assertThat(d.collective().seq()).isEqualTo(3);
  }

  @Test
  void aCoalescedGroupCutDownToItsEndMarkerAtTheOldestEndOfAWindowIsNoMismatch() {
    Snapshots s = job().all("dpA", "all_reduce", COMPLETED);
    // Then every member issued and started a coalesced group; none finished it.
    for (int r : new int[] {0, 2, 4, 6}) {
      s.coalesced(r, "dpA", STARTED, 1024, "all_reduce", "all_reduce");
    }
    // Rank 2's window at the daemon kept only the group's end marker; the others hold it whole, and older records.
    s.dropOldest(2, 3);
    Diagnosis d = HangAnalyzer.analyze(s.liveAfter(Duration.ofSeconds(5)));
    assertThat(d.evidence()).noneSatisfy(e -> assertThat(e.kind()).isEqualTo(Evidence.Kind.SIGNATURE_MISMATCH));
    assertThat(d.symptom()).isEqualTo(Symptom.FABRIC);
  }

  @Test
  void allToAllWithUnevenSplitsIsFineButUnbalancedTotalsAreAMismatch() {
    Snapshots even = healthySteps(job(), 1);
    // Per-rank sizes differ (uneven splits) but the totals balance: not a mismatch; the hang is elsewhere.
    even.issue(0, "dpA", "all_to_all", COMPLETED, 100, 40, "Float").issue(2, "dpA", "all_to_all", COMPLETED, 20, 80, "Float")
        .issue(4, "dpA", "all_to_all", COMPLETED, 50, 50, "Float").issue(6, "dpA", "all_to_all", COMPLETED, 30, 30, "Float");
    even.only("tp0", "_all_gather_base", STARTED, 0);
    assertThat(HangAnalyzer.analyze(even.offline()).symptom()).isEqualTo(Symptom.CPU_STALL);

    Snapshots unbalanced = healthySteps(job(), 1);
    unbalanced.issue(0, "dpA", "all_to_all", STARTED, 100, 40, "Float")
        .issue(2, "dpA", "all_to_all", STARTED, 20, 80, "Float")
        .issue(4, "dpA", "all_to_all", STARTED, 50, 50, "Float")
        .issue(6, "dpA", "all_to_all", STARTED, 30, 10, "Float");
    Diagnosis d = HangAnalyzer.analyze(unbalanced.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(d.evidence().get(0).detail())
        .startsWith("all_to_all totals do not balance: total input numel 200 but total output numel 180");

    // Every member issued the very same split: the totals are the group size times one member's.
    Snapshots uniform = healthySteps(job(), 1);
    for (int r : new int[] {0, 2, 4, 6}) {
      uniform.issue(r, "dpA", "all_to_all", STARTED, 100, 90, "Float");
    }
    Diagnosis same = HangAnalyzer.analyze(uniform.offline());
    assertThat(same.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(same.culpritRanks()).containsExactly(0, 2, 4, 6);
    assertThat(same.evidence().get(0).detail())
        .startsWith("all_to_all totals do not balance: total input numel 400 but total output numel 360");
  }

  @Test
  void eachMembersOwnOpIsCheckedWhenEveryMemberSplitsAnAllToAllDifferently() {
    Snapshots s = job().group("world", 0, 1, 2, 3, 4, 5, 6, 7);
    for (int r = 0; r < 8; r++) {
      s.issue(r, "world", "all_to_all", STARTED, 10 + r, 10 + r, "Float");
    }
    // Rank 6's is the seventh distinct signature of the seq: checked on its own, not among the first few.
    s.outputDtype(6, "BFloat16");
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(d.culpritRanks()).containsExactly(6);
    assertThat(d.evidence().get(0).detail())
        .startsWith("rank 6: all_to_all input dtypes [Float] do not match its output dtypes [BFloat16]");
  }

  @Test
  void gatherWhoseOutputCannotHoldTheGroupIsAMismatchOnThatRank() {
    Snapshots s = healthySteps(job(), 1);
    s.issue(0, "dpA", "_all_gather_base", STARTED, 256, 1024, "BFloat16")
        .issue(2, "dpA", "_all_gather_base", STARTED, 256, 1024, "BFloat16")
        .issue(4, "dpA", "_all_gather_base", STARTED, 256, 512, "BFloat16")
        .issue(6, "dpA", "_all_gather_base", STARTED, 256, 1024, "BFloat16");
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(d.culpritRanks()).containsExactly(4);
    assertThat(d.evidence().get(0).detail())
        .contains("_all_gather_base input numel 256 * group size 4 does not match output numel 512");
  }

  @Test
  void twoRanksThatBothSendIsAPairingMismatch() {
    Snapshots s = new Snapshots(2).group("pp", 0, 1);
    s.issue(0, "pp", "send", COMPLETED, 64, "Float").issue(1, "pp", "recv", COMPLETED, 64, "Float");
    s.issue(0, "pp", "send", STARTED, 64, "Float").issue(1, "pp", "send", STARTED, 64, "Float");
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(d.culpritRanks()).containsExactly(0, 1);
    assertThat(d.evidence().get(0).detail()).startsWith("ranks 0 and 1 both issued send to each other");
  }

  @Test
  void rankThatDiedInsideTheCollectiveIsDeadEvenThoughItStartedIt() {
    // Rank 3 issued and started the gather, then its process died: its last records say "started", like
    // its peers', but it will never complete.
    Snapshots s = healthySteps(job(), 2).all("tp1", "_all_gather_base", STARTED).lost(3);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.DEAD_RANK);
    assertThat(d.culpritRanks()).containsExactly(3);
    assertThat(d.collective().processGroup()).isEqualTo("tp1");
  }

  @Test
  void sendInAFourStagePipelineWhosePeerNeverPostsTheRecvBlamesThePeer() {
    // p2p seqs are per rank in groups of more than two: rank 0's 3rd op pairs with rank 8's 1st.
    Snapshots s = new Snapshots(16).group("pp", 0, 4, 8, 12);
    s.p2p(0, "pp", "send", 4, COMPLETED).p2p(4, "pp", "recv", 0, COMPLETED)
        .p2p(0, "pp", "recv", 12, COMPLETED).p2p(12, "pp", "send", 0, COMPLETED)
        .p2p(0, "pp", "send", 8, STARTED);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(8);
    assertThat(d.collective().op()).isEqualTo("send 0->8");
  }

  @Test
  void sendAndRecvBothPostedAndStartedInAFourStagePipelineIsNotBlamedOnEitherRank() {
    Snapshots s = new Snapshots(16).group("pp", 0, 4, 8, 12);
    s.p2p(0, "pp", "send", 4, COMPLETED).p2p(4, "pp", "recv", 0, COMPLETED)
        .p2p(0, "pp", "send", 8, STARTED).p2p(8, "pp", "recv", 0, STARTED);
    Diagnosis d = HangAnalyzer.analyze(s.offline());
    assertThat(d.symptom()).isEqualTo(Symptom.FABRIC);
    assertThat(d.culpritRanks()).isEmpty();
  }

  @Test
  void aConnectedRankThatMissedTheSnapshotIsNotBlamedForWhatItsOldWindowLacks() {
    // Rank 3 answered no snapshot and its stored window predates the gather; rank 1's device never started it.
    Snapshots s = healthySteps(job(), 2);
    s.only("tp0", "_all_gather_base", STARTED, 0).only("tp0", "_all_gather_base", SCHEDULED, 1)
        .only("tp1", "_all_gather_base", STARTED, 2);
    JobEvidence base = s.offline();
    List<RankEvidence> ranks = new ArrayList<>();
    for (RankEvidence r : base.ranks()) {
      ranks.add(r.rank() != 3 ? r : new RankEvidence(3, r.identity(), Liveness.UNKNOWN, false, "no reply in time",
          r.groups(), r.records(), r.progress(), r.events(), r.frames()));
    }
    Diagnosis d = HangAnalyzer.analyze(new JobEvidence("t", 8, ranks, 0, Duration.ofSeconds(1)));
    assertThat(d.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(1);
  }
  /**
   * Rank 3 answered no snapshot; its window shows its tp1 gather issued and not started while rank 2's device runs
   * it, and rank 3 last said every record had reached the daemon {@code windowCurrentAfter} the gather was issued.
   */
  private static Diagnosis unansweredWindowNotStarted(Duration windowCurrentAfter) {
    Snapshots s = healthySteps(job(), 2);
    s.only("tp1", "_all_gather_base", STARTED, 2).only("tp1", "_all_gather_base", SCHEDULED, 3);
    JobEvidence base = s.liveAfter(Duration.ofSeconds(5));
    List<RankEvidence> ranks = new ArrayList<>();
    for (RankEvidence r : base.ranks()) {
      if (r.rank() != 3) {
        ranks.add(r);
        continue;
      }
      long issued = r.records().get(r.records().size() - 1).getTimeCreatedNs();
      ranks.add(new RankEvidence(3, r.identity(), Liveness.ALIVE, false, "no reply in time", r.groups(), r.records(),
          r.progress(), r.events(), r.frames(), RankEvidence.Source.RECORDS, issued + windowCurrentAfter.toNanos()));
    }
    return HangAnalyzer.analyze(new JobEvidence("t", 8, ranks, base.observedAtNs(), base.stallThreshold()));
  }

  @Test
  void anUnansweredRanksWindowShowsAGpuStallOnlyIfItWasCurrentOnceTheOpHadWaitedTheStallThreshold() {
    // Threshold 1 s: current 2 s after the issue, the window's "not started" held for a stalled op.
    Diagnosis vouched = unansweredWindowNotStarted(Duration.ofSeconds(2));
    assertThat(vouched.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(vouched.culpritRanks()).containsExactly(3);

    // Current only 0.5 s after the issue (a daemon behind its intake), the start may be there, unread.
    Diagnosis behind = unansweredWindowNotStarted(Duration.ofMillis(500));
    assertThat(behind.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(behind.culpritRanks()).isEmpty();
    assertThat(behind.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.NO_SNAPSHOT);
      assertThat(e.ranks()).containsExactly(3);
    });
  }

  @Test
  void aProgressCounterPastTheSeqOutranksAnOlderStartedCopyOfTheRecord() {
    Snapshots s = healthySteps(job(), 2);
    s.all("0", "all_reduce", STARTED);
    JobEvidence job = s.offline();
    // Rank 0's counter says it completed the world all_reduce its record copy still shows started: the copy is older.
    List<RankEvidence> ranks = new ArrayList<>(job.ranks());
    RankEvidence r0 = ranks.get(0);
    ranks.set(0, new RankEvidence(0, r0.identity(), r0.liveness(), r0.answered(), r0.missingReason(), r0.groups(),
        r0.records(), List.of(ProcessGroupProgress.newBuilder().setProcessGroup("0").setLastEnqueuedSeq(100)
            .setLastStartedSeq(100).setLastCompletedSeq(100).setLastEnqueuedP2PSeq(-1).setLastCompletedP2PSeq(-1)
            .build()), r0.events(), r0.frames()));

    Diagnosis d = HangAnalyzer.analyze(new JobEvidence("t", 8, ranks, 0, Duration.ofSeconds(1)));

    StuckCollective world = d.stuck().stream().filter(c -> c.collective().processGroup().equals("0")).findFirst()
        .orElseThrow();
    assertThat(world.completed()).containsExactly(0);
    assertThat(world.waiting()).containsExactly(1, 2, 3, 4, 5, 6, 7);
  }
}
