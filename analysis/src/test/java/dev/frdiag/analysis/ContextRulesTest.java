package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The context rules as a pure function of a finished diagnosis and hand-built node context. */
class ContextRulesTest {
  /** Ranks 0-3 on node-a (devices 0-3), ranks 4-7 on node-b (devices 0-3). */
  private static final int WORLD = 8;

  @Test
  void leavesADiagnosisWithoutContextAsItIs() {
    Diagnosis d = cpuStall(5);
    assertThat(ContextRules.apply(d, job())).isSameAs(d);
  }

  @Test
  void cudaFailureOnTheCulpritsHostMakesAGpuFault() {
    Diagnosis d = cpuStall(5);
    Diagnosis out = ContextRules.apply(d, job(node("node-b",
        finding(ContextFinding.Kind.GPU_FAULT, "node-b", -1, 1, "", 0, "",
            "CUDA failure 'an illegal memory access was encountered': \"transport.cc:187 NCCL WARN\"",
            "nccl log")),
        node("node-a", finding(ContextFinding.Kind.LINK_FAULT, "node-a", -1, -1, "mlx5_0", 1, "10.0.0.7<4711>",
            "NET/IB: completion with error status 12", "nccl log"))));

    assertThat(out.verdict()).isEqualTo(Verdict.HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(out.culpritRanks()).containsExactly(5);
    assertThat(out.culpritHosts()).containsExactly("node-b");
    assertThat(out.confidence()).isEqualTo(0.95);
    assertThat(out.headline()).isEqualTo("Rank 5 (node-b) hit a CUDA failure (CUDA failure 'an illegal memory "
        + "access was encountered'): GPU fault; network errors its peers log are consequences.");
    assertThat(out.recommendation()).isEqualTo(Wording.recommendation(Symptom.GPU_STALL));
    assertThat(out.evidence().get(0)).isEqualTo(new Evidence(Evidence.Kind.GPU_FAULT, List.of(5),
        "node-b: CUDA failure 'an illegal memory access was encountered': \"transport.cc:187 NCCL WARN\" "
            + "[nccl log]"));
    // The verdict's own evidence follows the finding that overrode it.
    assertThat(out.evidence().subList(1, out.evidence().size())).isEqualTo(d.evidence());
    assertThat(out.culprits()).extracting(Culprit::rank).containsExactly(5);
  }

  @Test
  void cudaFailureOfARankOutsideACpuStallChangesNothing() {
    Diagnosis d = cpuStall(5);
    Diagnosis out = ContextRules.apply(d, job(node("node-a",
        finding(ContextFinding.Kind.GPU_FAULT, "node-a", 2, -1, "", 0, "", "CUDA failure 'out of memory'", ""))));

    assertThat(out).isSameAs(d);
  }

  @Test
  void aMismatchIsAProgramBugWhateverTheGpusSay() {
    Diagnosis d = diagnosis(Verdict.HANG, Symptom.MISMATCH, List.of(5), 0.95);
    Diagnosis out = ContextRules.apply(d, job(node("node-b",
        finding(ContextFinding.Kind.GPU_FAULT, "node-b", 5, -1, "", 0, "", "CUDA failure 'unspecified'", ""))));

    assertThat(out).isSameAs(d);
  }

  @Test
  void localNicFaultMakesAFabricVerdictANodeNetworkFault() {
    Diagnosis d = fabric();
    Diagnosis out = ContextRules.apply(d, job(node("node-b",
        finding(ContextFinding.Kind.LOCAL_NIC_FAULT, "node-b", -1, -1, "mlx5_1", 1, "",
            "NET/IB: GPU Direct RDMA registration failed", "nccl log"))));

    assertThat(out.verdict()).isEqualTo(Verdict.HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.NODE_NETWORK);
    assertThat(out.culpritHosts()).containsExactly("node-b");
    assertThat(out.culpritRanks()).isEmpty();
    assertThat(out.confidence()).isEqualTo(0.85);
    assertThat(out.headline()).isEqualTo("The network path of node-b failed locally (NET/IB: GPU Direct RDMA "
        + "registration failed): NIC, GPUDirect RDMA or PCIe on that host, not the fabric.");
    assertThat(out.evidence().get(0)).isEqualTo(new Evidence(Evidence.Kind.LOCAL_NIC_FAULT, List.of(),
        "node-b mlx5_1:1: NET/IB: GPU Direct RDMA registration failed [nccl log]"));
    assertThat(out.recommendation()).isEqualTo(Wording.recommendation(Symptom.NODE_NETWORK));
  }

  @Test
  void localNicFaultDoesNotOverrideAConfidentGpuStall() {
    Diagnosis d = diagnosis(Verdict.HANG, Symptom.GPU_STALL, List.of(5), 0.85);
    Diagnosis out = ContextRules.apply(d, job(node("node-b",
        finding(ContextFinding.Kind.LOCAL_NIC_FAULT, "node-b", -1, -1, "mlx5_1", 1, "", "NIC reset", ""))));

    assertThat(out.symptom()).isEqualTo(Symptom.GPU_STALL);
  }

  @Test
  void linkFaultConfirmsTheFabricAndNamesHostNicPortAndPeer() {
    Diagnosis d = fabric();
    Diagnosis out = ContextRules.apply(d, job(node("node-a",
        finding(ContextFinding.Kind.LINK_FAULT, "node-a", -1, -1, "mlx5_0", 1, "10.0.0.7<54862>",
            "NET/IB: completion with error status 12 (retry exceeded): \"net_ib.cc:1695 NCCL WARN\"",
            "nccl log"))));

    assertThat(out.verdict()).isEqualTo(Verdict.HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.FABRIC);
    assertThat(out.culpritRanks()).isEmpty();
    assertThat(out.culprits()).isEmpty();
    assertThat(out.culpritHosts()).containsExactly("node-a", "10.0.0.7");
    assertThat(out.confidence()).isEqualTo(0.85);
    assertThat(out.headline()).isEqualTo("The link between node-a mlx5_0 port 1 and peer 10.0.0.7 failed "
        + "(NET/IB: completion with error status 12 (retry exceeded)): fabric, no rank diverged.");
    assertThat(out.evidence().get(0).kind()).isEqualTo(Evidence.Kind.LINK_FAULT);
    assertThat(out.evidence().get(0).detail()).startsWith("node-a mlx5_0:1: NET/IB: completion with error");
  }

  @Test
  void linkFaultTurnsAnUndecidedVerdictIntoAHangAndDropsWhatWasMissing() {
    Diagnosis d = new Diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), List.of(), null, 0.3,
        List.of(new Evidence(Evidence.Kind.WAITING, List.of(0, 1), "Ranks 0, 1 wait"),
            new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), "no start events")),
        List.of(), List.of(), List.of(), "The job is stuck.", "Collect more evidence.", 0);
    Diagnosis out = ContextRules.apply(d, job(node("node-a",
        finding(ContextFinding.Kind.LINK_FAULT, "node-a", -1, -1, "mlx5_0", 0, "", "link_downed +1", "ib"))));

    assertThat(out.verdict()).isEqualTo(Verdict.HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.FABRIC);
    assertThat(out.evidence()).extracting(Evidence::kind)
        .containsExactly(Evidence.Kind.LINK_FAULT, Evidence.Kind.WAITING);
  }

  @Test
  void aPeerThatWentAwayMakesAnUndecidedVerdictADeadRankNamingItsHostWeakly() {
    Diagnosis d = new Diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), List.of(), null, 0.3,
        List.of(new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), "no rank's records, dump or watchdog line")),
        List.of(), List.of(), List.of(), "Nothing here says how the ranks stand.", "Collect more evidence.", 0);
    Diagnosis out = ContextRules.apply(d, job(node("node-a",
        finding(ContextFinding.Kind.DEAD_PEER, "node-a", -1, -1, "", 0, "10.0.0.9<43215>",
            "socket closed by peer 10.0.0.9<43215>", "nccl log"))));

    assertThat(out.verdict()).isEqualTo(Verdict.HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.DEAD_RANK);
    assertThat(out.culpritRanks()).isEmpty();
    assertThat(out.culpritHosts()).containsExactly("10.0.0.9");
    assertThat(out.confidence()).isEqualTo(0.4);
    assertThat(out.headline()).startsWith("The peer at 10.0.0.9 went away (");
    assertThat(out.evidence()).extracting(Evidence::kind).containsExactly(Evidence.Kind.DEAD_PEER);
  }

  @Test
  void aPeerThatWentAwayIsAConsequenceOfAStrongerVerdict() {
    Diagnosis d = cpuStall(5);
    Diagnosis out = ContextRules.apply(d, job(node("node-a",
        finding(ContextFinding.Kind.DEAD_PEER, "node-a", -1, -1, "", 0, "10.0.0.9<43215>", "broken pipe", "log"))));

    assertThat(out.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(out.culpritRanks()).containsExactly(5);
    assertThat(out.evidence()).extracting(Evidence::kind).contains(Evidence.Kind.DEAD_PEER);
  }

  @Test
  void nothingFromTheRanksAndEveryNodesLogHealthyIsAWeakNoHang() {
    Diagnosis d = new Diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), List.of(), null, 0.3,
        List.of(new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), "no rank's records, dump or watchdog line")),
        List.of(), List.of(), List.of(), "Nothing here says how the ranks stand.", "Collect more evidence.", 0);
    ContextFinding healthyA = finding(ContextFinding.Kind.HEALTHY_SETUP, "node-a", -1, -1, "", 0, "", "set up", "a");
    ContextFinding healthyB = finding(ContextFinding.Kind.HEALTHY_SETUP, "node-b", -1, -1, "", 0, "", "set up", "b");
    JobEvidence logsOnly = new JobEvidence("job", WORLD, List.of(), 0, Duration.ofSeconds(1),
        List.of(node("node-a", healthyA), node("node-b", healthyB)));

    Diagnosis out = ContextRules.apply(d, logsOnly);
    assertThat(out.verdict()).isEqualTo(Verdict.NO_HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.NONE);
    assertThat(out.confidence()).isEqualTo(0.4);

    // One node whose log was not all healthy (or an input that was not read) leaves it undecided.
    JobEvidence oneUnsure = new JobEvidence("job", WORLD, List.of(), 0, Duration.ofSeconds(1),
        List.of(node("node-a", healthyA), node("node-b")));
    assertThat(ContextRules.apply(d, oneUnsure).verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
  }

  @Test
  void linkFaultDoesNotOverrideACpuStall() {
    Diagnosis d = cpuStall(5);
    Diagnosis out = ContextRules.apply(d, job(node("node-a",
        finding(ContextFinding.Kind.LINK_FAULT, "node-a", -1, -1, "mlx5_0", 1, "", "link_downed +1", "ib"))));

    assertThat(out.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(out.culpritRanks()).containsExactly(5);
  }

  @Test
  void quietCountersKeepAFabricVerdictFromNamingALink() {
    Diagnosis d = fabric();
    Diagnosis out = ContextRules.apply(d, job(
        node("node-a", finding(ContextFinding.Kind.QUIET, "node-a", -1, -1, "mlx5_0", 1, "", "no counter moved",
            "ib")),
        node("node-b", finding(ContextFinding.Kind.QUIET, "", -1, -1, "mlx5_0", 1, "", "no counter moved", "ib"))));

    assertThat(out.symptom()).isEqualTo(Symptom.FABRIC);
    assertThat(out.culpritHosts()).isEmpty();
    assertThat(out.confidence()).isEqualTo(0.4);
    assertThat(out.headline()).isEqualTo(d.headline());
    List<Evidence> added = out.evidence().subList(0, 2);
    assertThat(added.get(0)).isEqualTo(new Evidence(Evidence.Kind.NO_FAILURE_LOGGED, List.of(),
        "The NCCL logs of node-a, node-b show no failure (no WARN that points at a GPU, NIC or link)"));
    // A finding without a host is the node's own.
    assertThat(added.get(1)).isEqualTo(new Evidence(Evidence.Kind.QUIET_COUNTERS, List.of(),
        "No InfiniBand error, wait or retransmission counter moved on node-a, node-b during the hang: this "
            + "points away from the fabric (check the GPUs and NCCL logs of the members)"));
    assertThat(out.evidence().subList(2, out.evidence().size())).isEqualTo(d.evidence());
  }

  @Test
  void contextThatChangesNothingComesAfterTheVerdictsEvidence() {
    Diagnosis d = cpuStall(5);
    Diagnosis out = ContextRules.apply(d, job(node("node-b",
        finding(ContextFinding.Kind.DEAD_PEER, "node-b", 6, -1, "", 0, "", "peer 10.0.0.8 closed the socket",
            "nccl log"),
        finding(ContextFinding.Kind.NOTE, "node-b", -1, -1, "", 0, "", "NCCL 2.21.5", ""))));

    assertThat(out.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(out.headline()).isEqualTo(d.headline());
    assertThat(out.evidence().subList(0, d.evidence().size())).isEqualTo(d.evidence());
    assertThat(out.evidence().subList(d.evidence().size(), out.evidence().size())).containsExactly(
        new Evidence(Evidence.Kind.DEAD_PEER, List.of(6), "node-b: peer 10.0.0.8 closed the socket [nccl log]"),
        new Evidence(Evidence.Kind.NOTE, List.of(), "node-b: NCCL 2.21.5"));
  }

  @Test
  void withNoFaultLoggedSaysSoAfterTheVerdictsEvidence() {
    Diagnosis d = cpuStall(5);
    Diagnosis out = ContextRules.apply(d, job(node("node-b",
        finding(ContextFinding.Kind.CONGESTION, "node-b", -1, -1, "mlx5_0", 1, "", "port_xmit_wait +120000",
            "ib"))));

    assertThat(out.evidence().subList(d.evidence().size(), out.evidence().size())).extracting(Evidence::kind)
        .containsExactly(Evidence.Kind.NO_FAILURE_LOGGED, Evidence.Kind.CONGESTION);
  }

  @Test
  void quotesAFewDistinctFindingsAndCountsTheRest() {
    List<ContextFinding> findings = new ArrayList<>();
    for (int i = 0; i < ContextRules.QUOTED + 2; i++) {
      findings.add(finding(ContextFinding.Kind.NOTE, "node-a", -1, -1, "", 0, "", "line " + i, ""));
      // A retrying NIC prints the same line again and again: one fact.
      findings.add(finding(ContextFinding.Kind.NOTE, "node-a", -1, -1, "", 0, "", "line " + i, ""));
    }
    Diagnosis d = cpuStall(5);
    Diagnosis out = ContextRules.apply(d, job(NodeContext.newBuilder().setHostname("node-a")
        .addAllFindings(findings).build()));

    List<Evidence> notes = out.evidence().stream().filter(e -> e.kind() == Evidence.Kind.NOTE).toList();
    assertThat(notes).hasSize(ContextRules.QUOTED + 1);
    assertThat(notes.get(ContextRules.QUOTED).detail()).isEqualTo("2 more note findings");
  }

  private static Diagnosis cpuStall(int culprit) {
    return diagnosis(Verdict.HANG, Symptom.CPU_STALL, List.of(culprit), 0.9);
  }

  private static Diagnosis fabric() {
    return diagnosis(Verdict.HANG, Symptom.FABRIC, List.of(), 0.6);
  }

  private static Diagnosis diagnosis(Verdict verdict, Symptom symptom, List<Integer> culprits, double confidence) {
    CollectiveRef ref = new CollectiveRef("0", "", 7, false, "all_reduce", "");
    List<Culprit> details = culprits.stream()
        .map(r -> new Culprit(r, r < 4 ? "node-a" : "node-b", 100 + r, r % 4, "", List.of())).toList();
    return new Diagnosis(verdict, symptom, culprits, culprits.isEmpty() ? List.of() : List.of("node-b"), ref,
        confidence, List.of(new Evidence(Evidence.Kind.WAITING, List.of(0, 1, 2), "Ranks 0-2 wait")), details,
        List.of(), List.of(), "The verdict from the records.", "Do what the records say.", 0);
  }

  private static JobEvidence job(NodeContext... context) {
    List<RankEvidence> ranks = new ArrayList<>();
    for (int r = 0; r < WORLD; r++) {
      ranks.add(new RankEvidence(r, RankIdentity.newBuilder().setGlobalRank(r).setHostname(r < 4 ? "node-a"
          : "node-b").setCudaDevice(r % 4).build(), Liveness.ALIVE, true, "", List.of(), List.of(), List.of(),
          List.of(), Map.of()));
    }
    return new JobEvidence("job", WORLD, ranks, 0, Duration.ofSeconds(1), List.of(context));
  }

  private static NodeContext node(String host, ContextFinding... findings) {
    return NodeContext.newBuilder().setHostname(host).addAllFindings(List.of(findings)).build();
  }

  private static ContextFinding finding(ContextFinding.Kind kind, String host, int rank, int device, String nic,
      int port, String peer, String detail, String source) {
    return ContextFinding.newBuilder().setKind(kind).setHost(host).setRank(rank).setDevice(device).setNic(nic)
        .setPort(port).setPeer(peer).setDetail(detail).setSource(source).build();
  }
}
