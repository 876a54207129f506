package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.readers.pytorch.WatchdogLine;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** What watchdog lines say of each rank, before any analysis. */
class WatchdogEvidenceTest {
  @Test
  void aTimeoutWithoutAStatusLineMeansEverythingBeforeItCompleted() {
    Map<Integer, RankEvidence> e = of(timeout(0, "0", 122, "_REDUCE_SCATTER_BASE"));

    ProcessGroupProgress p = e.get(0).progress().get(0);
    assertThat(p.getProcessGroup()).isEqualTo("0");
    assertThat(p.getLastEnqueuedSeq()).isEqualTo(122);
    assertThat(p.getLastCompletedSeq()).isEqualTo(121);
    assertThat(e.get(0).records()).singleElement().satisfies(r -> {
      assertThat(r.getCollectiveSeq()).isEqualTo(122);
      assertThat(r.getOp()).isEqualTo("_reduce_scatter_base");
    });
    assertThat(e.get(0).source()).isEqualTo(RankEvidence.Source.LOG);
  }

  @Test
  void aStatusLineGivesTheCountersItPrints() {
    WatchdogLine status = new WatchdogLine(WatchdogLine.Kind.PG_STATUS, 0, 0, "0", "default_pg", 122, "", -1, -1,
        -1, 127, 121, -1, -1, "a.log:2", "status");
    Map<Integer, RankEvidence> e = of(timeout(0, "0", 122, "ALLREDUCE"), status);

    assertThat(e.get(0).progress()).singleElement().satisfies(p -> {
      assertThat(p.getLastEnqueuedSeq()).isEqualTo(127);
      assertThat(p.getLastCompletedSeq()).isEqualTo(121);
    });
    assertThat(e.get(0).groups()).singleElement().extracting(ProcessGroup::getDesc).isEqualTo("default_pg");
  }

  @Test
  void unnamedLinesAtOneSeqAreOneCollectiveAndAtNearSeqsAnAssumedGroup() {
    Map<Integer, RankEvidence> same = of(timeout(0, "", 3742816, "REDUCE"),
        timeout(1, "", 3742816, "_ALLGATHER_BASE"));
    assertThat(same.get(0).groups()).singleElement().satisfies(g -> {
      assertThat(g.getName()).isEqualTo("pg?@3742816");
      assertThat(g.getAssumed()).isFalse();
      assertThat(g.getRanksList()).containsExactly(0, 1);
    });

    Map<Integer, RankEvidence> near = of(timeout(1, "", 532339, "BROADCAST"),
        timeout(0, "", 532341, "_ALLGATHER_BASE"));
    assertThat(near.get(0).groups()).singleElement().satisfies(g -> {
      assertThat(g.getName()).isEqualTo("pg?@532339-532341");
      assertThat(g.getAssumed()).isTrue();
    });

    Map<Integer, RankEvidence> far = of(timeout(1, "", 100, "BROADCAST"), timeout(0, "", 5000, "ALLREDUCE"));
    assertThat(far.get(0).groups()).extracting(ProcessGroup::getName).containsExactly("pg?@5000");
    assertThat(far.get(1).groups()).extracting(ProcessGroup::getName).containsExactly("pg?@100");
  }

  @Test
  void aRankTheCollectiveCheckerLastSawBehindTheOthersNeverIssuedTheNextCollective() {
    Map<Integer, RankEvidence> e = of(running(2, 1276), running(0, 1277), running(1, 1277));

    assertThat(e.get(0).records()).singleElement().satisfies(r -> assertThat(r.getCollectiveSeq()).isEqualTo(1277));
    assertThat(e.get(0).progress().get(0).getLastCompletedSeq()).isEqualTo(1276);
    // Rank 2 passed the check of 1276 (the others could not have left it otherwise) and never entered 1277.
    assertThat(e.get(2).records()).isEmpty();
    assertThat(e.get(2).progress()).singleElement().satisfies(p -> {
      assertThat(p.getLastEnqueuedSeq()).isEqualTo(1276);
      assertThat(p.getLastCompletedSeq()).isEqualTo(1276);
    });
  }

  private static WatchdogLine timeout(int rank, String pg, long seq, String op) {
    return new WatchdogLine(WatchdogLine.Kind.TIMEOUT, rank, rank, pg, "", seq, op, 10, 10, 600000, -1, -1, -1, -1,
        "a.log:1", "timeout");
  }

  private static WatchdogLine running(int rank, long seq) {
    return new WatchdogLine(WatchdogLine.Kind.RUNNING, -1, rank, "", "", seq, "ALLREDUCE", -1, -1, -1, -1, -1, -1,
        -1, "ds.log:1", "running");
  }

  private static Map<Integer, RankEvidence> of(WatchdogLine... lines) {
    Map<Integer, List<WatchdogLine>> byRank = new TreeMap<>();
    for (WatchdogLine l : lines) {
      byRank.computeIfAbsent(l.rank(), r -> new java.util.ArrayList<>()).add(l);
    }
    return WatchdogEvidence.of(byRank, rank -> RankIdentity.newBuilder().setGlobalRank(rank).setWorldSize(8)
        .build());
  }
}
