package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.proto.v1.CollectiveRecord;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A rank's records of one group by seq: looked up, stepped through and kept in issue order within a seq. */
class RecordsBySeqTest {
  private static CollectiveRecord op(long recordId, long seq, String op) {
    return CollectiveRecord.newBuilder().setRecordId(recordId).setCollectiveSeq(seq).setOp(op).build();
  }

  /** The records added in the order given, each under its own collective seq, then sealed. */
  private static RecordsBySeq sealed(CollectiveRecord... records) {
    RecordsBySeq bySeq = new RecordsBySeq();
    for (CollectiveRecord r : records) {
      bySeq.add(r.getCollectiveSeq(), r);
    }
    bySeq.seal();
    return bySeq;
  }

  private static List<String> ops(List<CollectiveRecord> records) {
    return records.stream().map(CollectiveRecord::getOp).toList();
  }

  @Test
  void aCoalescedGroupsRecordsShareTheirSeqInIssueOrderAndLookupsFindSeqsAroundGaps() {
    RecordsBySeq bySeq = sealed(op(0, 3, "all_reduce"), op(1, 4, "allreduce"), op(2, 4, "allreduce"),
        op(3, 4, "coalesced"), op(4, 7, "broadcast"));

    assertThat(bySeq.size()).isEqualTo(3);
    assertThat(ops(bySeq.get(4))).containsExactly("allreduce", "allreduce", "coalesced");
    assertThat(bySeq.get(5)).isNull();
    assertThat(bySeq.contains(7)).isTrue();
    assertThat(bySeq.contains(6)).isFalse();
    assertThat(bySeq.indexAbove(3)).isEqualTo(1);
    assertThat(bySeq.indexAbove(5)).as("past the gap: 7").isEqualTo(2);
    assertThat(bySeq.indexAbove(7)).as("none above").isEqualTo(3);
    assertThat(bySeq.indexBelow(7)).isEqualTo(1);
    assertThat(bySeq.indexBelow(3)).as("none below").isEqualTo(-1);
    assertThat(bySeq.seq(bySeq.indexBelow(100))).isEqualTo(7);
    assertThat(ops(bySeq.all())).containsExactly("all_reduce", "allreduce", "allreduce", "coalesced", "broadcast");
  }

  @Test
  void recordsOutOfSeqOrderAreSortedKeepingEachSeqsIssueOrder() {
    RecordsBySeq bySeq = sealed(op(0, 9, "first of 9"), op(1, 2, "only 2"), op(2, 9, "second of 9"),
        op(3, 5, "only 5"));

    assertThat(List.of(bySeq.seq(0), bySeq.seq(1), bySeq.seq(2))).containsExactly(2L, 5L, 9L);
    assertThat(ops(bySeq.at(2))).containsExactly("first of 9", "second of 9");
    assertThatThrownBy(() -> bySeq.at(0).get(1)).isInstanceOf(IndexOutOfBoundsException.class);
  }

  @Test
  void nothingHeldFindsNothing() {
    RecordsBySeq bySeq = sealed();
    assertThat(bySeq.size()).isZero();
    assertThat(bySeq.get(0)).isNull();
    assertThat(bySeq.indexAbove(-1)).isZero();
    assertThat(bySeq.indexBelow(0)).isEqualTo(-1);
    assertThat(bySeq.all()).isEmpty();
  }
}
