package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** A gloo dump lists no group members; the node's ranks that name a group are taken as its members. */
class NodeGroupsTest {
  private static FlightRecorderDump recorded(int rank) throws Exception {
    return DumpReader.create().parse(FakeWorkerServer.resource("/torch-2.13-cpu/stall_dp_rank2_w4/"
        + "fr_trace_json_rank_" + rank + ".json"), Path.of("worker_" + rank + ".sock"), rank);
  }

  @Test
  void membersAreTheRanksWhoseDumpsNameTheGroup() throws Exception {
    NodeGroups groups = new NodeGroups();
    assertThat(recorded(0).processGroups()).as("pg_config lists no members").isEmpty();

    for (int rank = 0; rank < 4; rank++) {
      groups.complete(rank, recorded(rank));
    }
    FlightRecorderDump rank0 = groups.complete(0, recorded(0));

    assertThat(rank0.processGroup("0").getRanksList()).containsExactly(0, 1, 2, 3);
    assertThat(rank0.processGroup("1").getRanksList()).containsExactly(0, 1);
    assertThat(rank0.processGroup("3").getRanksList()).containsExactly(0, 2);
    assertThat(rank0.records()).allSatisfy(r -> assertThat(r.getCommsId()).isNotZero());
    // Usable as the daemon takes it: every record on a group this rank is a member of.
    assertThat(DumpFile.usable(0, 4, rank0, java.util.List.of()).records()).hasSize(23);
  }

  @Test
  void aDumpThatListsItsGroupsIsLeftAsItIs() {
    FakeTrainingRanks.Training t = new FakeTrainingRanks.Training(0, 4, System.currentTimeMillis() - 1_000, 100, 64);
    FlightRecorderDump dump = t.dump(System.currentTimeMillis(), false, true, Path.of("x"));

    assertThat(new NodeGroups().complete(0, dump)).isSameAs(dump);
  }
}
