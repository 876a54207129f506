package dev.frdiag.testing.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.testing.sim.Workload.Role;
import dev.frdiag.testing.sim.Workload.StepOp;
import java.util.List;
import org.junit.jupiter.api.Test;

class WorkloadTest {
  private final Topology topology = Topology.defaults();

  @Test
  void firstStageSendsForwardThenReceivesTheGradient() {
    List<StepOp> step = Workload.defaults().stepOf(topology, 2);
    assertThat(step).extracting(StepOp::role).containsExactly(Role.TP_ALL_GATHER, Role.TP_REDUCE_SCATTER,
        Role.PP_SEND, Role.PP_RECV, Role.EP_ALL_TO_ALL, Role.DP_COALESCED, Role.DP_ALL_REDUCE,
        Role.WORLD_ALL_REDUCE);
    assertThat(step).extracting(StepOp::group).containsExactly("tp0", "tp0", "pp2", "pp2", "dp2", "dp2", "dp2",
        "0");
    assertThat(step.get(2).peer()).isEqualTo(10);
  }

  @Test
  void lastStageReceivesThenSendsBack() {
    List<StepOp> step = Workload.defaults().stepOf(topology, 10);
    assertThat(step).extracting(StepOp::role).containsSubsequence(Role.PP_RECV, Role.PP_SEND);
    assertThat(step.get(2).peer()).isEqualTo(2);
  }

  @Test
  void shapesFollowTheTensorParallelSize() {
    Workload w = Workload.builder().tokens(1024).hidden(512).build();
    StepOp gather = w.stepOf(topology, 0).get(0);
    assertThat(gather.calls().get(0).op()).isEqualTo("_all_gather_base");
    assertThat(gather.calls().get(0).inputs().dims()).containsExactly(1024, 512);
    assertThat(gather.calls().get(0).outputs().dims()).containsExactly(4096, 512);
    assertThat(gather.calls().get(0).inputs().dtype()).isEqualTo("BFloat16");
    StepOp bucket = w.stepOf(topology, 0).get(6);
    assertThat(bucket.calls().get(0).inputs().dtype()).isEqualTo("Float");
    assertThat(bucket.calls().get(0).inputs().halved().dims()).containsExactly(256, 512);
  }

  @Test
  void optionalOpsAndSingleRankGroupsAreLeftOut() {
    Workload lean = Workload.builder().expertParallel(false).coalescedGradients(false).build();
    assertThat(lean.stepOf(topology, 0)).extracting(StepOp::role).doesNotContain(Role.EP_ALL_TO_ALL,
        Role.DP_COALESCED);
    Topology flat = Topology.builder().worldSize(8).tensorParallel(1).pipelineStages(1).build();
    assertThat(Workload.defaults().stepOf(flat, 3)).extracting(StepOp::role).containsExactly(
        Role.EP_ALL_TO_ALL, Role.DP_COALESCED, Role.DP_ALL_REDUCE, Role.WORLD_ALL_REDUCE);
  }

  @Test
  void theFusedPathIssuesBothGradientsAsOneOp() {
    Workload fused = Workload.builder().gradients(Workload.Gradients.ALLREDUCE_COALESCED).build();
    List<StepOp> step = fused.stepOf(topology, 2);
    assertThat(step).extracting(StepOp::role).contains(Role.DP_ALLREDUCE_COALESCED).doesNotContain(
        Role.DP_COALESCED);
    StepOp gradients = step.stream().filter(StepOp::fused).findFirst().orElseThrow();
    assertThat(gradients.coalesced()).isFalse();
    assertThat(gradients.calls()).hasSize(2);
  }

  @Test
  void shardedOverTheWorldTheParametersAndGradientsGoThroughTheWorldGroup() {
    Topology tp8 = Topology.builder().worldSize(64).tensorParallel(8).pipelineStages(1).build();
    Workload sharded = Workload.builder().shardedOverWorld(true).build();
    List<StepOp> step = sharded.stepOf(tp8, 5);
    assertThat(step).extracting(StepOp::role).containsExactly(Role.TP_ALL_GATHER, Role.TP_REDUCE_SCATTER,
        Role.WORLD_ALL_GATHER, Role.WORLD_REDUCE_SCATTER, Role.WORLD_ALL_REDUCE);
    assertThat(step).extracting(StepOp::group).containsExactly("tp0", "tp0", "0", "0", "0");
    StepOp gather = step.get(2);
    assertThat(gather.calls().get(0).outputs().dims()[0]).isEqualTo(gather.calls().get(0).inputs().dims()[0] * 64);
  }

  @Test
  void rejectsAHiddenSizeThatCannotBeHalved() {
    assertThatThrownBy(() -> Workload.builder().hidden(1).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("hidden must be at least 2, got 1");
  }
}
