package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The daemon's records as the straggler analysis reads them live. */
class RecordTimelinesTest {
  private static final long MS = 1_000_000;
  private static final long T0 = 1_790_000_000_000_000_000L;

  /** Four ranks of 40 world all-reduces; rank 1 issues each 25 ms late; only the last {@code since} count. */
  private static JobEvidence job(boolean membersFromRecords) {
    List<RankEvidence> ranks = new ArrayList<>();
    for (int r = 0; r < 4; r++) {
      ProcessGroup world = ProcessGroup.newBuilder().setName("0").setDesc("default_pg")
          .addAllRanks(membersFromRecords ? List.of(r) : List.of(0, 1, 2, 3)).setMembersFromRecords(
              membersFromRecords).build();
      List<CollectiveRecord> records = new ArrayList<>();
      for (int s = 1; s <= 40; s++) {
        long issued = T0 + s * 100 * MS + (r == 1 ? 25 * MS : 0);
        records.add(CollectiveRecord.newBuilder().setRecordId(s).setProcessGroup("0").setCollectiveSeq(s)
            .setOp("all_reduce").setState(CollectiveState.COMPLETED).setTimeCreatedNs(issued)
            .addInputSizes(Shape.newBuilder().addDims(1024)).addInputDtypes("Float")
            .addOutputSizes(Shape.newBuilder().addDims(1024)).addOutputDtypes("Float")
            // A comms_id computed from a partial member list differs from rank to rank.
            .setCommsId(membersFromRecords ? 1000 + r : 77 + s).build());
      }
      ranks.add(new RankEvidence(r, RankIdentity.newBuilder().setHostname("node" + r).build(), Liveness.ALIVE,
          true, "", List.of(world), records, List.of(), List.of(), Map.of()));
    }
    return new JobEvidence("job", 4, ranks, T0 + 5000 * MS, Duration.ofSeconds(30));
  }

  @Test
  void recordsIssuedInTheWindowJoinBySeqAndNameTheLateRank() {
    TimelineEvidence t = RecordTimelines.of(job(false), T0 + 1050 * MS);

    assertThat(t.ranks()).allSatisfy(r -> assertThat(r.collectives()).hasSize(30));
    CollectiveTiming c = t.ranks().get(0).collectives().get(0);
    assertThat(c.members()).containsExactly(0, 1, 2, 3);
    assertThat(c.bytes()).isEqualTo(4096);
    assertThat(c.hasCommsId()).isTrue();
    assertThat(t.deviceStarts()).isFalse();
    Diagnosis d = StragglerAnalyzer.analyze(t);
    assertThat(d.verdict() + " " + d.symptom() + " " + d.culpritRanks()).isEqualTo("SLOW STRAGGLER [1]");
    assertThat(d.culpritHosts()).containsExactly("node1");
  }

  @Test
  void groupsWhoseMembersCameFromRecordsJoinByNameWithoutTheirComms_id() {
    TimelineEvidence t = RecordTimelines.of(job(true), 0);

    assertThat(t.ranks().get(2).collectives()).allSatisfy(c -> {
      assertThat(c.members()).isEmpty();
      assertThat(c.hasCommsId()).isFalse();
    });
    Diagnosis d = StragglerAnalyzer.analyze(t);
    assertThat(d.verdict()).isEqualTo(Verdict.SLOW);
    assertThat(d.symptom()).isEqualTo(Symptom.STRAGGLER);
    assertThat(d.culpritRanks()).containsExactly(1);
  }
}
