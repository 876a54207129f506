package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A rank's records indexed: its oldest unfinished op across its groups, its newest, whether it records starts. */
class RankIndexTest {
  private static ProcessGroup group(String name) {
    return ProcessGroup.newBuilder().setName(name).addRanks(0).addRanks(1).setGlobalRankStart(0)
        .setGlobalRankStride(1).build();
  }

  private static CollectiveRecord op(long recordId, String group, long seq, CollectiveState state) {
    return CollectiveRecord.newBuilder().setRecordId(recordId).setProcessGroup(group).setCollectiveSeq(seq)
        .setOp("allreduce").setState(state).setTimeCreatedNs(1_000).build();
  }

  private static RankIndex index(List<ProcessGroup> groups, List<CollectiveRecord> records) {
    return new RankIndex(new RankEvidence(0, RankIdentity.getDefaultInstance(), Liveness.ALIVE, true, "", groups,
        records, List.of(), List.of(), Map.of()), Map.of());
  }

  @Test
  void theOldestUnfinishedOpIsFoundAcrossGroupsByRecordId() {
    RankIndex index = index(List.of(group("tp"), group("dp")), List.of(
        op(1, "tp", 1, CollectiveState.COMPLETED),
        op(2, "dp", 1, CollectiveState.SCHEDULED),
        op(3, "tp", 2, CollectiveState.SCHEDULED),
        op(4, "dp", 2, CollectiveState.COMPLETED)));

    assertThat(index.oldestIncomplete.getRecordId()).isEqualTo(2);
    assertThat(index.newest.getRecordId()).isEqualTo(4);
    assertThat(index.recordsStarts).as("no record shows a start").isFalse();
  }

  @Test
  void recordsTheirIdsCannotOrderLeaveTheOldestToTheOrderOfTheRing() {
    // No record ids and one creation time: the ring's order is all there is, whatever order the groups hash in.
    List<ProcessGroup> groups = new ArrayList<>();
    List<CollectiveRecord> records = new ArrayList<>();
    for (int g = 12; g > 0; g--) {
      groups.add(group("pg" + g));
      records.add(op(0, "pg" + g, 1, CollectiveState.SCHEDULED));
    }

    RankIndex index = index(groups, records);

    assertThat(index.oldestIncomplete).isSameAs(records.get(0));
  }

  @Test
  void aStartedRecordInAnyGroupShowsTheRankRecordsStarts() {
    RankIndex index = index(List.of(group("tp"), group("dp")), List.of(
        op(1, "tp", 1, CollectiveState.COMPLETED),
        op(2, "dp", 1, CollectiveState.STARTED)));

    assertThat(index.recordsStarts).isTrue();
    assertThat(index.oldestIncomplete.getRecordId()).isEqualTo(2);
  }

  @Test
  void nothingUnfinishedAndRecordsOfUnlistedGroupsAreLeftOut() {
    RankIndex index = index(List.of(group("tp")), List.of(
        op(1, "tp", 1, CollectiveState.COMPLETED),
        op(2, "other", 1, CollectiveState.STARTED)));

    assertThat(index.oldestIncomplete).isNull();
    assertThat(index.recordsStarts).as("the started record is of a group the rank does not list").isFalse();
    assertThat(index.newest.getRecordId()).isEqualTo(2);
  }
}
