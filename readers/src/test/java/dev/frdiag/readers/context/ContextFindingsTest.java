package dev.frdiag.readers.context;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NicBinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.nccl.NcclLog;
import dev.frdiag.readers.nccl.NcclLogParser;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ContextFindingsTest {
  @Test
  void eachRankIsBoundToItsGpuAndTheNicItsConnectionLinesUseOnItsOwnHost() throws Exception {
    NcclLog log = NcclLogParser.create().parseLines(List.of(
        "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
        "b:2:2 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.2<0>",
        "a:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1a000 commId "
            + "0xc0ffee - Init START",
        "b:2:2 [1] NCCL INFO ncclCommInitRank comm 0xb0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 9a000 commId "
            + "0xc0ffee - Init START",
        "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/1/GDRDMA",
        "b:2:2 [1] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [receive] via NET/IB/0/GDRDMA"), "two-nodes.log");

    Map<String, List<NicBinding>> bound = ContextFindings.bindings(log);

    assertThat(bound.get("a")).extracting(NicBinding::getRank, NicBinding::getCudaDevice, NicBinding::getGpuBusId,
        NicBinding::getNic, NicBinding::getPort).containsExactly(
            org.assertj.core.groups.Tuple.tuple(0, 0, "1a000", "mlx5_1", 1),
            // A NIC the host named that no rank was placed on is still pictured.
            org.assertj.core.groups.Tuple.tuple(-1, -1, "", "mlx5_0", 1));
    assertThat(bound.get("b")).extracting(NicBinding::getRank, NicBinding::getNic).contains(
        org.assertj.core.groups.Tuple.tuple(1, "mlx5_0"));
    NodeContext nodeA = ContextFindings.nodes("job", log).stream().filter(n -> n.getHostname().equals("a"))
        .findFirst().orElseThrow();
    assertThat(nodeA.getRanksList()).containsExactly(0);
    assertThat(nodeA.getNicsList()).isEqualTo(bound.get("a"));
  }

  @Test
  void setUpLinesMakeAHealthySetupAndOnlyADestroyAlsoACleanTeardown() throws Exception {
    // Real lines from the corpus: DeepSpeedExamples#310's Init COMPLETE and AKS-RDMA#30's Destroy COMPLETE.
    String init = "gpu1:5022:5377 [1] NCCL INFO comm 0x4438f540 rank 1 nranks 8 cudaDev 1 busId 52000 - Init COMPLETE";
    String destroy = "nccl-tests-worker-0:64:229 [1] NCCL INFO comm 0x55ab26dea5d0 rank 1 nranks 16 cudaDev 1 busId "
        + "200000 - Destroy COMPLETE";

    List<ContextFinding.Kind> setUp = ContextFindings.nodes("job", NcclLogParser.create().parseLines(
        List.of(init), "init.log")).stream().flatMap(n -> n.getFindingsList().stream()).map(ContextFinding::getKind)
        .toList();
    List<ContextFinding.Kind> ended = ContextFindings.nodes("job", NcclLogParser.create().parseLines(
        List.of(init, destroy), "ended.log")).stream().flatMap(n -> n.getFindingsList().stream())
        .map(ContextFinding::getKind).toList();

    assertThat(setUp).contains(ContextFinding.Kind.HEALTHY_SETUP).doesNotContain(ContextFinding.Kind.CLEAN_TEARDOWN);
    assertThat(ended).contains(ContextFinding.Kind.HEALTHY_SETUP, ContextFinding.Kind.CLEAN_TEARDOWN);
  }

  @Test
  void aRankNoConnectionLinePlacesIsBoundToItsGpuOnly() throws Exception {
    NcclLog log = NcclLogParser.create().parseLines(List.of(
        "a:1:1 [3] NCCL INFO ncclCommInitRank comm 0xa0 rank 3 nranks 4 cudaDev 3 nvmlDev 3 busId 3b000 commId "
            + "0xc0ffee - Init START"), "one-rank.log");

    assertThat(ContextFindings.bindings(log).get("a")).extracting(NicBinding::getRank, NicBinding::getCudaDevice,
        NicBinding::getNic).containsExactly(org.assertj.core.groups.Tuple.tuple(3, 3, ""));
  }
}
