package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NicBinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Symptom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FabricMapTest {
  private static final int PER_HOST = 4;

  @Test
  void aLinkFaultMarksThePortItNamesAndTheFaultyHostComesFirst() {
    JobEvidence job = job(2, node("node-a"), node("node-b", finding(ContextFinding.Kind.LINK_FAULT, -1, -1,
        "mlx5_2", 1, "", "mlx5_2:1 link went down: link_downed 0 -> 1 (+1) in 30 s", "infiniband/mlx5_2/ports/1"),
        finding(ContextFinding.Kind.QUIET, -1, -1, "mlx5_1", 1, "", "mlx5_1:1: no error", "infiniband/mlx5_1")));

    FabricMap map = FabricMap.of(job, Symptom.FABRIC, List.of(), List.of("node-b"));

    assertThat(map.hosts()).extracting(FabricMap.Host::name).containsExactly("node-b", "node-a");
    FabricMap.Host b = map.hosts().get(0);
    assertThat(b.culprit()).isTrue();
    assertThat(b.failing()).isTrue();
    FabricMap.Nic broken = b.nics().stream().filter(n -> n.name().equals("mlx5_2")).findFirst().orElseThrow();
    assertThat(broken.ports()).singleElement().satisfies(p -> {
      assertThat(p.number()).isEqualTo(1);
      assertThat(p.marks()).singleElement().satisfies(m -> {
        assertThat(m.kind()).isEqualTo(Evidence.Kind.LINK_FAULT);
        assertThat(m.source()).isEqualTo("infiniband/mlx5_2/ports/1");
        assertThat(m.failing()).isTrue();
      });
    });
    FabricMap.Nic quiet = b.nics().stream().filter(n -> n.name().equals("mlx5_1")).findFirst().orElseThrow();
    assertThat(quiet.ports().get(0).marks()).singleElement().satisfies(m -> assertThat(m.failing()).isFalse());
    // Each GPU keeps the NIC its binding names: rank 6 is local GPU 2, bound to mlx5_2.
    assertThat(b.gpus()).extracting(FabricMap.Gpu::rank, FabricMap.Gpu::device, FabricMap.Gpu::nic)
        .contains(org.assertj.core.groups.Tuple.tuple(6, 2, "mlx5_2"));
    assertThat(map.hosts().get(1).failing()).isFalse();
    assertThat(map.otherHosts()).isZero();
  }

  @Test
  void aNcclErrorWithoutANicMarksTheGpuOfThePrintingDeviceAndKeepsItsPeer() {
    JobEvidence job = job(2, NodeContext.newBuilder().setHostname("node-b").addFindings(finding(
        ContextFinding.Kind.LOCAL_NIC_FAULT, -1, 1, "", 0, "10.0.0.9<4321>", "status 4: \"node-b:1:1 [1] WARN\"",
        "n.log:31")).build());

    FabricMap map = FabricMap.of(job, Symptom.NODE_NETWORK, List.of(5), List.of("node-b"));

    FabricMap.Gpu gpu = map.hosts().get(0).gpus().stream().filter(g -> g.device() == 1).findFirst().orElseThrow();
    // Device 1 of node-b is rank 5 by the ranks' own identities; the finding named only the device.
    assertThat(gpu.rank()).isEqualTo(5);
    assertThat(gpu.culprit()).isTrue();
    assertThat(gpu.marks()).singleElement().satisfies(m -> {
      assertThat(m.kind()).isEqualTo(Evidence.Kind.LOCAL_NIC_FAULT);
      assertThat(m.peer()).isEqualTo("10.0.0.9<4321>");
    });
  }

  @Test
  void inALargeJobOnlyTheHostsAFindingOrTheVerdictNamesArePictured() {
    List<NodeContext> nodes = new ArrayList<>();
    for (int h = 0; h < 20; h++) {
      nodes.add(node(host(h)));
    }
    nodes.set(13, node(host(13), finding(ContextFinding.Kind.LINK_FAULT, -1, -1, "mlx5_0", 1, "", "down", "ib")));
    JobEvidence job = job(20, nodes.toArray(NodeContext[]::new));

    FabricMap map = FabricMap.of(job, Symptom.FABRIC, List.of(), List.of(host(13), host(2)));

    assertThat(map.hosts()).extracting(FabricMap.Host::name).containsExactly(host(2), host(13));
    assertThat(map.otherHosts()).isEqualTo(18);
  }

  @Test
  void onlyNetworkVerdictsArePictured() {
    JobEvidence job = job(2, node("node-a"));

    assertThat(FabricMap.of(job, Symptom.GPU_STALL, List.of(1), List.of("node-a"))).isNull();
    assertThat(FabricMap.of(job, Symptom.FABRIC, List.of(), List.of())).isNotNull();
  }

  @Test
  void aHostileNodeCannotGrowThePictureWithoutBound() {
    NodeContext.Builder flood = NodeContext.newBuilder().setHostname("node-a");
    for (int i = 0; i < 500; i++) {
      flood.addNics(NicBinding.newBuilder().setRank(-1).setCudaDevice(-1).setNic("nic" + i).setPort(1));
      flood.addFindings(finding(ContextFinding.Kind.LINK_FAULT, -1, -1, "nic" + i, 1 + i, "", "x" + i, "s"));
    }
    JobEvidence job = job(1, flood.build());

    FabricMap.Host a = FabricMap.of(job, Symptom.FABRIC, List.of(), List.of("node-a")).hosts().get(0);

    assertThat(a.nics()).hasSizeLessThanOrEqualTo(FabricMap.MAX_PER_HOST);
    assertThat(a.nics()).allSatisfy(n -> assertThat(n.ports()).hasSizeLessThanOrEqualTo(FabricMap.MAX_PER_HOST));
  }

  private static String host(int h) {
    return String.format("node-%02d", h);
  }

  /** {@code hosts} hosts of {@value #PER_HOST} ranks; host h's GPU i is rank h*4+i and uses mlx5_i port 1. */
  private static JobEvidence job(int hosts, NodeContext... context) {
    List<RankEvidence> ranks = new ArrayList<>();
    List<NodeContext> nodes = new ArrayList<>();
    for (NodeContext n : context) {
      int h = n.getHostname().startsWith("node-") && Character.isDigit(n.getHostname().charAt(5))
          ? Integer.parseInt(n.getHostname().substring(5)) : n.getHostname().charAt(5) - 'a';
      NodeContext.Builder b = n.toBuilder();
      for (int i = 0; i < PER_HOST && n.getNicsCount() == 0; i++) {
        b.addNics(NicBinding.newBuilder().setRank(h * PER_HOST + i).setCudaDevice(i).setNic("mlx5_" + i).setPort(1));
      }
      nodes.add(b.build());
    }
    for (int r = 0; r < hosts * PER_HOST; r++) {
      String host = hosts > 2 ? host(r / PER_HOST) : "node-" + (char) ('a' + r / PER_HOST);
      ranks.add(new RankEvidence(r, RankIdentity.newBuilder().setGlobalRank(r).setHostname(host)
          .setCudaDevice(r % PER_HOST).build(), Liveness.ALIVE, true, "", List.of(), List.of(), List.of(), List.of(),
          Map.of()));
    }
    return new JobEvidence("job", hosts * PER_HOST, ranks, 0, Duration.ofSeconds(1), nodes);
  }

  private static NodeContext node(String host, ContextFinding... findings) {
    return NodeContext.newBuilder().setHostname(host).addAllFindings(List.of(findings)).build();
  }

  private static ContextFinding finding(ContextFinding.Kind kind, int rank, int device, String nic, int port,
      String peer, String detail, String source) {
    return ContextFinding.newBuilder().setKind(kind).setRank(rank).setDevice(device).setNic(nic).setPort(port)
        .setPeer(peer).setDetail(detail).setSource(source).build();
  }
}
