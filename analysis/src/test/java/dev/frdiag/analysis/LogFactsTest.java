package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The rules that read what ranks printed rather than recorded: a rank's own timeout on a collective its peers
 * finished, a group the lines only let us assume, and a rank that was idle when a peer's timeout was signalled.
 */
class LogFactsTest {
  private static final int WORLD = 2;

  @Test
  void aRankTimingOutInACollectivePeersFinishedPastIsAMismatchNotAGpuStall() {
    // Rank 0 times out in 122 (completed 121); rank 1 completed up to 125 and times out in 126.
    RankEvidence r0 = rank(0, "0", false, 127, 121, timedOut(122, "_reduce_scatter_base"));
    RankEvidence r1 = rank(1, "0", false, 128, 125, timedOut(126, "_all_gather_base"));

    Diagnosis d = HangAnalyzer.analyze(job(r0, r1));

    assertThat(d.verdict()).isEqualTo(Verdict.HANG);
    assertThat(d.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(d.culpritRanks()).containsExactly(0, 1);
    assertThat(d.confidence()).isLessThanOrEqualTo(0.6);
    assertThat(d.headline()).isEqualTo("Ranks 0, 1 disagree on what _reduce_scatter_base (0, seq 122) is: rank 0 "
        + "timed out inside it while rank 1 completed it and went on; they issued different sequences of "
        + "collectives: program bug.");
    assertThat(d.evidence().get(0)).isEqualTo(new Evidence(Evidence.Kind.SEQUENCE_MISMATCH, List.of(0, 1),
        "Rank 0 timed out inside 0#122 _reduce_scatter_base while rank 1 completed it and the group's collectives "
            + "after it (up to seq 125), which need every member's device past it: seq 122 is not the same "
            + "collective on these ranks"));
  }

  @Test
  void aPeerThatFinishedOnlyTheStuckCollectiveLeavesTheGpuReading() {
    // The root of a broadcast may finish its part before the others receive it: one collective ahead proves
    // nothing, so the lagging rank stays the device suspect.
    RankEvidence r0 = rank(0, "0", false, 122, 121, timedOut(122, "broadcast"));
    RankEvidence r1 = rank(1, "0", false, 123, 122, timedOut(123, "all_reduce"));

    Diagnosis d = HangAnalyzer.analyze(job(r0, r1));

    assertThat(d.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(0);
  }

  @Test
  void aVerdictOnAnAssumedGroupIsInsufficientEvidenceWithItsSymptom() {
    RankEvidence r0 = rank(0, "pg?@10-12", true, 10, 9, timedOut(10, "broadcast"));
    RankEvidence r1 = rank(1, "pg?@10-12", true, 12, 11, timedOut(12, "_all_gather_base"));

    Diagnosis d = HangAnalyzer.analyze(job(r0, r1));

    assertThat(d.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(d.symptom()).isEqualTo(Symptom.MISMATCH);
    assertThat(d.culpritRanks()).isEmpty();
    assertThat(d.confidence()).isLessThanOrEqualTo(0.4);
    assertThat(d.headline()).startsWith("Probably: ");
    assertThat(d.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.INSUFFICIENT);
      assertThat(e.detail()).contains("name no process group");
    });
  }

  @Test
  void aRankThatRanFarAheadInAnAssumedGroupIsOnlyTheBestReading() {
    RankEvidence r0 = rank(0, "pg?@10-12", true, 10, 9, timedOut(10, "all_reduce"));
    RankEvidence r1 = rank(1, "pg?@10-12", true, 30, 9, timedOut(10, "all_reduce"));

    Diagnosis d = HangAnalyzer.analyze(job(r0, r1));

    assertThat(d.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.confidence()).isEqualTo(0.3);
    assertThat(d.evidence()).anySatisfy(e -> assertThat(e.kind()).isEqualTo(Evidence.Kind.RAN_AHEAD));
  }

  @Test
  void aRankIdleWhenAPeersTimeoutWasSignalledNeverIssuedTheCollective() {
    RankEvent signal = RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_TIMEOUT).setProcessGroup("0")
        .setSeq(-1).setLastEnqueuedSeq(136).setLastCompletedSeq(136).setMessage("dump signal from rank 2").build();
    RankEvidence r5 = new RankEvidence(5, identity(5), Liveness.UNKNOWN, true, "", List.of(group("0", false, 5)),
        List.of(), List.of(progress("0", 136, 136)), List.of(signal), Map.of(), RankEvidence.Source.LOG);

    Diagnosis d = HangAnalyzer.analyze(new JobEvidence("j", 8, List.of(r5), 0, Duration.ofSeconds(1)));

    assertThat(d.verdict()).isEqualTo(Verdict.HANG);
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(5);
    assertThat(d.confidence()).isEqualTo(0.4);
    assertThat(d.evidence().get(0).kind()).isEqualTo(Evidence.Kind.NOT_ISSUED);
  }

  @Test
  void aRankThatTimedOutInsideACollectiveIsNotIdle() {
    RankEvidence r0 = rank(0, "0", false, 5, 4, timedOut(5, "all_reduce"));

    Diagnosis d = HangAnalyzer.analyze(new JobEvidence("j", 4, List.of(r0), 0, Duration.ofSeconds(1)));

    assertThat(d.symptom()).isNotEqualTo(Symptom.CPU_STALL);
    assertThat(d.evidence()).noneSatisfy(e -> assertThat(e.kind()).isEqualTo(Evidence.Kind.NOT_ISSUED));
  }

  /** A rank of a two-rank group with a timeout record at {@code timeout}'s seq and the given counters. */
  private static RankEvidence rank(int rank, String group, boolean assumed, long enqueued, long completed,
      RankEvent timeout) {
    RankEvent event = timeout.toBuilder().setProcessGroup(group).setLastEnqueuedSeq(enqueued)
        .setLastCompletedSeq(completed).build();
    CollectiveRecord record = CollectiveRecord.newBuilder().setRecordId(0).setProcessGroup(group)
        .setCollectiveSeq(event.getSeq()).setOp(event.getOp()).setState(CollectiveState.SCHEDULED).build();
    List<RankEvent> events = new ArrayList<>(List.of(event));
    return new RankEvidence(rank, identity(rank), Liveness.UNKNOWN, true, "", List.of(group(group, assumed, 0, 1)),
        List.of(record), List.of(progress(group, enqueued, completed)), events, Map.of(), RankEvidence.Source.LOG);
  }

  private static RankEvent timedOut(long seq, String op) {
    return RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_TIMEOUT).setSeq(seq).setOp(op)
        .setMessage("Watchdog caught collective operation timeout").build();
  }

  private static ProcessGroup group(String name, boolean assumed, int... members) {
    ProcessGroup.Builder g = ProcessGroup.newBuilder().setName(name).setAssumed(assumed)
        .setGlobalRankStart(members[0]).setGlobalRankStride(1);
    for (int m : members) {
      g.addRanks(m);
    }
    return g.build();
  }

  private static ProcessGroupProgress progress(String group, long enqueued, long completed) {
    return ProcessGroupProgress.newBuilder().setProcessGroup(group).setLastEnqueuedSeq(enqueued)
        .setLastStartedSeq(-1).setLastCompletedSeq(completed).setLastEnqueuedP2PSeq(-1).setLastCompletedP2PSeq(-1)
        .build();
  }

  private static RankIdentity identity(int rank) {
    return RankIdentity.newBuilder().setGlobalRank(rank).setWorldSize(WORLD).setLocalRank(-1).setCudaDevice(-1)
        .build();
  }

  private static JobEvidence job(RankEvidence... ranks) {
    return new JobEvidence("j", WORLD, List.of(ranks), 0, Duration.ofSeconds(1));
  }
}
