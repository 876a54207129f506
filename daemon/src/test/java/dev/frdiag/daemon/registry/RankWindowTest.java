package dev.frdiag.daemon.registry;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Shape;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A rank's kept window: records built back as they were sent, the newest ids kept, re-sent records replaced. */
class RankWindowTest {
  private static final CollectiveRecord SHARED = CollectiveRecord.newBuilder().setProcessGroup("tp0")
      .setOp("_all_gather_base").addInputSizes(Shape.newBuilder().addDims(4096).addDims(4096))
      .addInputDtypes("BFloat16").addFrameIds(3).setBackend("nccl").build();

  private static CollectiveRecord record(long id, CollectiveState state) {
    return SHARED.toBuilder().setRecordId(id).setCollectiveSeq(id + 1).setOpId(id + 2).setPeer(-1)
        .setState(state).setTimeCreatedNs(1_000 + id).setTimeStartedNs(state == CollectiveState.SCHEDULED ? 0 : 2_000)
        .setTimeoutMs(600_000).setCommsId(0x9e3779b97f4a7c15L ^ id).setDurationMs(1.5).setRetired(id % 2 == 0)
        .build();
  }

  /** A window of {@code capacity} holding records 0..count-1, each in {@code state}. */
  private static RankWindow filled(int capacity, long count, CollectiveState state) {
    RankWindow w = new RankWindow(capacity);
    for (long id = 0; id < count; id++) {
      w.put(record(id, state), SHARED);
    }
    return w;
  }

  private static List<Long> ids(RankWindow w) {
    return w.records().stream().map(CollectiveRecord::getRecordId).toList();
  }

  @Test
  void recordsComeBackAsSentOldestFirst() {
    RankWindow w = filled(8, 5, CollectiveState.COMPLETED);
    assertThat(w.records()).containsExactly(record(0, CollectiveState.COMPLETED),
        record(1, CollectiveState.COMPLETED), record(2, CollectiveState.COMPLETED),
        record(3, CollectiveState.COMPLETED), record(4, CollectiveState.COMPLETED));
  }

  @Test
  void aReSentRecordReplacesItsCopyAndOneOlderThanTheWindowIsIgnored() {
    RankWindow w = filled(4, 10, CollectiveState.SCHEDULED);
    w.put(record(8, CollectiveState.COMPLETED), SHARED);
    w.put(record(3, CollectiveState.COMPLETED), SHARED);
    assertThat(ids(w)).as("the newest 4 ids").containsExactly(6L, 7L, 8L, 9L);
    assertThat(w.records().get(2)).isEqualTo(record(8, CollectiveState.COMPLETED));
  }

  @Test
  void idsMissingFromTheRanksStreamLeaveGapsNotStaleRecords() {
    RankWindow w = new RankWindow(4);
    w.put(record(1, CollectiveState.COMPLETED), SHARED);
    w.put(record(2, CollectiveState.COMPLETED), SHARED);
    w.put(record(6, CollectiveState.COMPLETED), SHARED);
    assertThat(ids(w)).as("2 is out of the newest 4 ids (3..6); 1 shares 5's slot but is not 5")
        .containsExactly(6L);
  }

  @Test
  void theLargestIdsAndAnUnknownStateComeBackIntact() {
    RankWindow w = new RankWindow(3);
    for (long id = Long.MAX_VALUE - 4; id > 0 && id <= Long.MAX_VALUE - 1; id++) {
      w.put(record(id, CollectiveState.COMPLETED), SHARED);
    }
    w.put(record(Long.MAX_VALUE, CollectiveState.COMPLETED).toBuilder().setStateValue(77).build(), SHARED);
    assertThat(ids(w)).containsExactly(Long.MAX_VALUE - 2, Long.MAX_VALUE - 1, Long.MAX_VALUE);
    assertThat(w.records().get(2).getStateValue()).isEqualTo(77);
  }

  @Test
  void clearForgetsEveryRecordAndEveryRecordBuiltFromIt() {
    RankWindow w = new RankWindow(4);
    w.put(record(8, CollectiveState.STARTED), SHARED);
    assertThat(w.records()).hasSize(1);
    w.clear();
    assertThat(w.records()).isEmpty();
    // A lower id in the slot 8 held: taken (nothing is older than an empty window), and built anew.
    w.put(record(0, CollectiveState.COMPLETED), SHARED);
    assertThat(w.records()).containsExactly(record(0, CollectiveState.COMPLETED));
  }

  @Test
  void aRecordBuiltAheadIsReadAsBuiltUntilItsSlotChanges() {
    RankWindow w = filled(4, 4, CollectiveState.STARTED);
    List<CollectiveRecord> ahead = w.records();
    w.put(record(2, CollectiveState.COMPLETED), SHARED);
    List<CollectiveRecord> now = w.records();
    assertThat(now).containsExactly(record(0, CollectiveState.STARTED), record(1, CollectiveState.STARTED),
        record(2, CollectiveState.COMPLETED), record(3, CollectiveState.STARTED));
    assertThat(now.get(0)).as("unchanged: the record built ahead").isSameAs(ahead.get(0));
    assertThat(now.get(3)).isSameAs(ahead.get(3));
    assertThat(now.get(2)).as("re-sent: built anew").isNotSameAs(ahead.get(2));
    w.put(record(4, CollectiveState.SCHEDULED), SHARED);
    assertThat(ids(w)).as("4 took 0's slot").containsExactly(1L, 2L, 3L, 4L);
    assertThat(w.records().get(3)).isEqualTo(record(4, CollectiveState.SCHEDULED));
  }
}
