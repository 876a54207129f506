package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import java.util.List;
import org.junit.jupiter.api.Test;

class OfflineEvidenceTest {
  private static CollectiveRecord record(long id, String op, long seq, CollectiveState state) {
    return CollectiveRecord.newBuilder().setRecordId(id).setProcessGroup("5").setOp(op).setCollectiveSeq(seq)
        .setState(state).build();
  }

  private static final CollectiveRecord SECOND = record(41, "all_reduce", 8, CollectiveState.COMPLETED);
  private static final CollectiveRecord MARKER = record(42, "coalesced", 8, CollectiveState.COMPLETED);
  private static final CollectiveRecord NEXT = record(43, "all_reduce", 9, CollectiveState.COMPLETED);
  private static final CollectiveRecord STUCK = record(44, "all_to_all", 10, CollectiveState.SCHEDULED);

  @Test
  void aWrappedRingLosesItsOldestOpWhichTheOverwriteMayHaveCut() {
    assertThat(OfflineEvidence.withoutCutOp(List.of(SECOND, MARKER, NEXT, STUCK))).containsExactly(NEXT, STUCK);
  }

  @Test
  void aRingThatNeverWrappedIsKeptWhole() {
    CollectiveRecord first = SECOND.toBuilder().setRecordId(0).build();
    assertThat(OfflineEvidence.withoutCutOp(List.of(first, MARKER, STUCK))).containsExactly(first, MARKER, STUCK);
  }

  @Test
  void anOnlyActiveDumpIsKeptWhole() {
    // Its oldest entry is outstanding, not an op long done: it is evidence of where the rank is stuck.
    assertThat(OfflineEvidence.withoutCutOp(List.of(STUCK))).containsExactly(STUCK);
    assertThat(OfflineEvidence.withoutCutOp(List.of())).isEmpty();
  }

  @Test
  void unreadableFilesAloneAreNothingToAnalyse() {
    OfflineEvidence evidence = new OfflineEvidence().unreadable(3, "truncated pickle");
    assertThat(evidence.isEmpty()).isTrue();
  }
}
