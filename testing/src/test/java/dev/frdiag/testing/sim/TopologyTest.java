package dev.frdiag.testing.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class TopologyTest {
  private final Topology topology = Topology.defaults();

  @Test
  void defaultsAreSixteenRanksOnTwoHostsWithTp4AndTwoStages() {
    assertThat(topology).isEqualTo(new Topology(16, 8, 4, 2));
    assertThat(topology.stageSize()).isEqualTo(8);
    assertThat(topology.dataParallel()).isEqualTo(2);
    assertThat(topology.hostCount()).isEqualTo(2);
  }

  @Test
  void namesHostsWithAtLeastTwoDigits() {
    assertThat(topology.hostOf(0)).isEqualTo("node00");
    assertThat(topology.hostOf(15)).isEqualTo("node01");
    Topology big = Topology.builder().worldSize(1024).build();
    assertThat(big.hostOf(1023)).isEqualTo("node127");
    assertThat(big.localRankOf(1023)).isEqualTo(7);
  }

  @Test
  void tensorParallelGroupsAreContiguousRanks() {
    ProcessGroupSpec tp = topology.tensorParallelGroupOf(6);
    assertThat(tp.name()).isEqualTo("tp1");
    assertThat(tp.desc()).isEqualTo("TENSOR_MODEL_PARALLEL_GROUP");
    assertThat(tp.ranks()).containsExactly(4, 5, 6, 7);
  }

  @Test
  void pipelineGroupsPairARankWithTheSamePositionInTheNextStage() {
    assertThat(topology.pipelineGroupsOf(3)).containsExactly(
        new ProcessGroupSpec("pp3", "PIPELINE_MODEL_PARALLEL_GROUP", new int[] {3, 11}));
    assertThat(topology.pipelineGroupsOf(11)).containsExactly(
        new ProcessGroupSpec("pp3", "PIPELINE_MODEL_PARALLEL_GROUP", new int[] {3, 11}));
    Topology four = Topology.builder().worldSize(32).pipelineStages(4).build();
    assertThat(four.pipelineGroupsOf(13)).extracting(ProcessGroupSpec::name).containsExactly("pp5", "pp13");
  }

  @Test
  void dataParallelGroupsJoinRanksWithTheSameTpPositionAndStage() {
    ProcessGroupSpec dp = topology.dataParallelGroupOf(13);
    assertThat(dp.name()).isEqualTo("dp5");
    assertThat(dp.desc()).isEqualTo("DATA_PARALLEL_GROUP");
    assertThat(dp.ranks()).containsExactly(9, 13);
    assertThat(topology.expertParallelGroupOf(13)).isEqualTo(dp);
  }

  @Test
  void worldGroupIsTheDefaultPg() {
    ProcessGroupSpec world = topology.worldGroup();
    assertThat(world.name()).isEqualTo("0");
    assertThat(world.desc()).isEqualTo("default_pg");
    assertThat(world.size()).isEqualTo(16);
  }

  @Test
  void everyRankIsInOneGroupOfEachKindAndGroupsListsEachGroupOnce() {
    List<ProcessGroupSpec> all = topology.groups();
    assertThat(all).doesNotHaveDuplicates();
    assertThat(all).hasSize(1 + 4 + 8 + 8);
    for (int rank = 0; rank < topology.worldSize(); rank++) {
      int r = rank;
      List<ProcessGroupSpec> mine = topology.groupsOf(rank);
      assertThat(mine).allSatisfy(g -> assertThat(g.contains(r)).isTrue());
      assertThat(all).containsAll(mine);
      assertThat(mine.stream().map(ProcessGroupSpec::name).toList()).isEqualTo(topology.groupNamesOf(rank));
      Set<String> containing = all.stream().filter(g -> g.contains(r)).map(ProcessGroupSpec::name)
          .collect(Collectors.toSet());
      assertThat(containing).containsExactlyInAnyOrderElementsOf(topology.groupNamesOf(rank));
    }
  }

  @Test
  void rejectsSizesThatDoNotDivide() {
    assertThatThrownBy(() -> Topology.builder().worldSize(12).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("worldSize 12 is not a multiple of ranksPerHost 8: every host must be full");
    assertThatThrownBy(() -> Topology.builder().worldSize(24).pipelineStages(5).build())
        .hasMessage("worldSize 24 is not a multiple of pipelineStages 5: every stage must have the same number "
            + "of ranks");
    assertThatThrownBy(() -> Topology.builder().worldSize(24).pipelineStages(2).tensorParallel(8).build())
        .hasMessage("a pipeline stage has 12 ranks (worldSize 24 / pipelineStages 2), which is not a multiple "
            + "of tensorParallel 8");
    assertThatThrownBy(() -> Topology.builder().tensorParallel(0).build())
        .hasMessage("tensorParallel must be at least 1, got 0");
  }

  @Test
  void rejectsRanksOutsideTheWorld() {
    assertThatThrownBy(() -> topology.hostOf(16))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("rank 16 is outside the world of 16 ranks");
  }
}
