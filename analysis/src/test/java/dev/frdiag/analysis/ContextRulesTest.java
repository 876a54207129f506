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
  void nothingFromTheRanksAndEveryNodesLogTornDownCleanlyIsAWeakNoHang() {
    Diagnosis d = undecided();
    ContextFinding healthyA = finding(ContextFinding.Kind.HEALTHY_SETUP, "node-a", -1, -1, "", 0, "", "set up", "a");
    ContextFinding healthyB = finding(ContextFinding.Kind.HEALTHY_SETUP, "node-b", -1, -1, "", 0, "", "set up", "b");
    ContextFinding tornDownA = finding(ContextFinding.Kind.CLEAN_TEARDOWN, "node-a", -1, -1, "", 0, "",
        "destroyed", "a");
    ContextFinding tornDownB = finding(ContextFinding.Kind.CLEAN_TEARDOWN, "node-b", -1, -1, "", 0, "",
        "destroyed", "b");
    JobEvidence logsOnly = new JobEvidence("job", WORLD, List.of(), 0, Duration.ofSeconds(1),
        List.of(node("node-a", healthyA, tornDownA), node("node-b", healthyB, tornDownB)));

    Diagnosis out = ContextRules.apply(d, logsOnly);
    assertThat(out.verdict()).isEqualTo(Verdict.NO_HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.NONE);
    assertThat(out.confidence()).isEqualTo(0.4);
    assertThat(out.headline()).contains("destroyed its communicators the normal way");

    // A node whose log shows only its set-up may be where the job stopped.
    JobEvidence oneSetUpOnly = new JobEvidence("job", WORLD, List.of(), 0, Duration.ofSeconds(1),
        List.of(node("node-a", healthyA), node("node-b", healthyB, tornDownB)));
    assertThat(ContextRules.apply(d, oneSetUpOnly).verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);

    // One node whose log was not all healthy (or an input that was not read) leaves it undecided.
    JobEvidence oneUnsure = new JobEvidence("job", WORLD, List.of(), 0, Duration.ofSeconds(1),
        List.of(node("node-a", healthyA), node("node-b", tornDownB)));
    assertThat(ContextRules.apply(d, oneUnsure).verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
  }

  @Test
  void setUpCommunicatorsAloneShowNoProgressSoTheVerdictStaysUndecided() {
    // A job that hangs at its first collective prints the same set-up lines as one that runs: no hang needs
    // something after the set-up (steps, completed tests, a clean teardown).
    Diagnosis d = undecided();
    ContextFinding healthyA = finding(ContextFinding.Kind.HEALTHY_SETUP, "node-a", -1, -1, "", 0, "", "set up", "a");
    ContextFinding healthyB = finding(ContextFinding.Kind.HEALTHY_SETUP, "node-b", -1, -1, "", 0, "", "set up", "b");
    JobEvidence logsOnly = new JobEvidence("job", WORLD, List.of(), 0, Duration.ofSeconds(1),
        List.of(node("node-a", healthyA), node("node-b", healthyB)));

    Diagnosis out = ContextRules.apply(d, logsOnly);
    assertThat(out.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(out.evidence()).extracting(Evidence::kind).contains(Evidence.Kind.NO_FAILURE_LOGGED);
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

  @Test
  void aWarnQuotedWithoutItsHostNamesTheLinkByItsPeer() {
    Diagnosis out = ContextRules.apply(undecided(), logsOnly(node("",
        finding(ContextFinding.Kind.LINK_FAULT, "", -1, -1, "", 0, "11.214.147.122<39138>",
            "transport retry counter exceeded (status 12 RETRY_EXC_ERR, vendor err 129): the NIC of the reporting "
                + "host got no ACK from 11.214.147.122; the link, a switch or RoCE routing between them is the "
                + "lead: \"Last error: NET/IB : Got completion from peer 11.214.147.122<39138> with error 12\"",
            "log:1"))));

    assertThat(out.verdict()).isEqualTo(Verdict.HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.FABRIC);
    assertThat(out.culpritHosts()).containsExactly("11.214.147.122");
    assertThat(out.headline()).startsWith("The link to peer 11.214.147.122 failed (transport retry counter");
  }

  @Test
  void aDeadProcessOutranksTheNetworkErrorsItsPeersLog() {
    Diagnosis out = ContextRules.apply(undecided(), logsOnly(
        node("", died("172.19.24.110", -1, 90738, "a Ray worker died or was killed (SYSTEM_ERROR)")),
        node("", finding(ContextFinding.Kind.LINK_FAULT, "", -1, -1, "", 0, "172.19.24.111<4711>",
            "transport retry counter exceeded (status 12)", "log:3")),
        node("", finding(ContextFinding.Kind.DEAD_PEER, "", -1, -1, "", 0, "172.19.24.111<4712>",
            "connection reset", "log:4"))));

    assertThat(out.verdict()).isEqualTo(Verdict.HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.DEAD_RANK);
    assertThat(out.culpritRanks()).isEmpty();
    assertThat(out.culpritHosts()).containsExactly("172.19.24.110");
    // No rank is known: a log line about some process, weak.
    assertThat(out.confidence()).isEqualTo(0.4);
    assertThat(out.headline()).isEqualTo("Process 90738 on 172.19.24.110 died (a Ray worker died or was killed "
        + "(SYSTEM_ERROR)): a process of the job went away; the network errors its peers log follow from it.");
    assertThat(out.evidence().get(0)).isEqualTo(new Evidence(Evidence.Kind.PROCESS_DIED, List.of(),
        "172.19.24.110: a Ray worker died or was killed (SYSTEM_ERROR) [log:1]"));
    assertThat(out.evidence()).extracting(Evidence::kind).contains(Evidence.Kind.LINK_FAULT,
        Evidence.Kind.DEAD_PEER).doesNotContain(Evidence.Kind.INSUFFICIENT);
    assertThat(out.recommendation()).isEqualTo(Wording.recommendation(Symptom.DEAD_RANK));
  }

  @Test
  void aDeadProcessWhoseRankIsKnownIsTheCulpritOfAFabricVerdict() {
    Diagnosis out = ContextRules.apply(fabric(), job(node("node-b",
        died("node-b", 6, 4242, "killed by signal 9 (SIGKILL)"))));

    assertThat(out.symptom()).isEqualTo(Symptom.DEAD_RANK);
    assertThat(out.culpritRanks()).containsExactly(6);
    assertThat(out.culpritHosts()).containsExactly("node-b");
    assertThat(out.confidence()).isEqualTo(0.7);
    assertThat(out.headline()).startsWith("Rank 6 (node-b) died (killed by signal 9 (SIGKILL)):");
  }

  @Test
  void aDeadProcessOfAnotherRankDoesNotOverrideACpuStall() {
    Diagnosis d = cpuStall(5);
    Diagnosis out = ContextRules.apply(d, job(node("node-a", died("node-a", 2, 4242, "killed by the OOM killer"))));

    assertThat(out.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(out.culpritRanks()).containsExactly(5);
    assertThat(out.evidence()).extracting(Evidence::kind).endsWith(Evidence.Kind.PROCESS_DIED);
  }

  @Test
  void aDeviceXidOnTheGpuOfARankMakesItTheGpuCulprit() {
    Diagnosis out = ContextRules.apply(undecided(), jobWithBusIds(node("node-b",
        xid(ContextFinding.Kind.XID_DEVICE_FAULT, "node-b", 0, "0000:DC:00",
            "Xid 149 (NVLink NETIR error) on GPU 0000:dc:00"))));

    assertThat(out.verdict()).isEqualTo(Verdict.HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(out.culpritRanks()).containsExactly(5);
    assertThat(out.culpritHosts()).containsExactly("node-b");
    assertThat(out.confidence()).isEqualTo(0.85);
    assertThat(out.headline()).isEqualTo("Rank 5 (node-b): the NVIDIA driver logged a fault of its GPU (Xid 149 "
        + "(NVLink NETIR error) on GPU 0000:dc:00): GPU fault; network errors its peers log are consequences.");
    assertThat(out.evidence().get(0).kind()).isEqualTo(Evidence.Kind.GPU_XID);
    assertThat(out.evidence().get(0).ranks()).containsExactly(5);
  }

  @Test
  void anApplicationXidOnTheGpuOfARankIsAWeakerGpuStall() {
    Diagnosis out = ContextRules.apply(undecided(), jobWithBusIds(node("node-b",
        xid(ContextFinding.Kind.XID_APPLICATION_FAULT, "node-b", 4343, "0000:1b:00",
            "Xid 31 (GPU memory page fault) on GPU 0000:1b:00 of python3 (pid 4343)"))));

    assertThat(out.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(out.culpritRanks()).containsExactly(4);
    assertThat(out.confidence()).isEqualTo(0.7);
    assertThat(out.headline()).contains("fault in its own GPU work (Xid 31");
  }

  @Test
  void aDeviceXidNoRankMapsToIsInsufficientEvidenceOfAGpuStall() {
    Diagnosis out = ContextRules.apply(undecided(), logsOnly(node("",
        xid(ContextFinding.Kind.XID_DEVICE_FAULT, "", 1818990, "0000:dc:00",
            "Xid 149 (NVLink NETIR error) on GPU 0000:dc:00, used by python3 (pid 1818990)"),
        xid(ContextFinding.Kind.XID_DEVICE_FAULT, "", 1818992, "0000:ed:00",
            "Xid 145 (NVLink RLW error) on GPU 0000:ed:00, used by python3 (pid 1818992)"))));

    assertThat(out.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(out.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(out.culpritRanks()).isEmpty();
    assertThat(out.confidence()).isEqualTo(0.4);
    assertThat(out.headline()).isEqualTo("The NVIDIA driver logged GPU faults (Xid 149 (NVLink NETIR error) on GPU "
        + "0000:dc:00, used by python3 (pid 1818990)) on GPUs 0000:dc:00, 0000:ed:00 of processes 1818990, 1818992, "
        + "but nothing here says which ranks ran there.");
    assertThat(out.evidence()).extracting(Evidence::kind).containsExactly(Evidence.Kind.GPU_XID,
        Evidence.Kind.GPU_XID, Evidence.Kind.INSUFFICIENT);
    assertThat(out.recommendation()).contains("pids 1818990, 1818992");
  }

  @Test
  void aXidNoRankMapsToDoesNotOverrideADecidedVerdict() {
    Diagnosis d = cpuStall(5);
    Diagnosis out = ContextRules.apply(d, job(node("node-c",
        xid(ContextFinding.Kind.XID_DEVICE_FAULT, "node-c", 77, "0000:dc:00", "Xid 79 (fallen off the bus)"))));

    assertThat(out.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(out.culpritRanks()).containsExactly(5);
    assertThat(out.evidence()).extracting(Evidence::kind).endsWith(Evidence.Kind.GPU_XID);
  }

  @Test
  void ranksBehindInLaunchedCollectivesAreHostSideStragglersEvenUnnamed() {
    Diagnosis out = ContextRules.apply(undecided(), logsOnly(node("", finding(ContextFinding.Kind.LAUNCH_LAG, "",
        -1, -1, "", 0, "", "30 ranks launched up to AllGather 640 while ranks 12, 13 launched 641", "ras:21"))));

    assertThat(out.verdict()).isEqualTo(Verdict.HANG);
    assertThat(out.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(out.culpritRanks()).isEmpty();
    assertThat(out.culpritHosts()).isEmpty();
    assertThat(out.confidence()).isEqualTo(0.4);
    assertThat(out.headline()).isEqualTo("NCCL RAS shows ranks behind their peers in launched collectives (30 ranks "
        + "launched up to AllGather 640 while ranks 12, 13 launched 641): the ranks behind never issued the next "
        + "collective (CPU side); the ranks ahead wait for them.");
    assertThat(out.evidence()).extracting(Evidence::kind).containsExactly(Evidence.Kind.LAUNCH_LAG);
  }

  @Test
  void namedLaggardsAreTheCulpritsOfAnInferredCpuStall() {
    Diagnosis ranAhead = diagnosis(Verdict.HANG, Symptom.CPU_STALL, List.of(), 0.5);
    Diagnosis out = ContextRules.apply(ranAhead, job(node("node-b", finding(ContextFinding.Kind.LAUNCH_LAG,
        "node-b", 6, 2, "", 0, "", "7 ranks launched up to AllReduce 64 while rank 6 launched 60", "ras:9"))));

    assertThat(out.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(out.culpritRanks()).containsExactly(6);
    assertThat(out.culpritHosts()).containsExactly("node-b");
    assertThat(out.confidence()).isEqualTo(0.5);
  }

  @Test
  void aConsistentRasReportRefutesACpuStallInferredWithoutCulprit() {
    Diagnosis ranAhead = diagnosis(Verdict.HANG, Symptom.CPU_STALL, List.of(), 0.5);
    Diagnosis out = ContextRules.apply(ranAhead, job(node("", finding(ContextFinding.Kind.RAS_CONSISTENT, "", -1,
        -1, "", 0, "", "NCCL RAS: 1 communicator of 256 ranks RUNNING, OK", "ras:12"))));

    assertThat(out.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(out.symptom()).isEqualTo(Symptom.UNKNOWN);
    assertThat(out.confidence()).isEqualTo(0.3);
    assertThat(out.evidence().get(0)).isEqualTo(new Evidence(Evidence.Kind.RAS_CONSISTENT, List.of(),
        "NCCL RAS: 1 communicator of 256 ranks RUNNING, OK [ras:12]"));
    assertThat(out.evidence()).extracting(Evidence::kind).endsWith(Evidence.Kind.INSUFFICIENT);
    assertThat(out.headline()).startsWith("NCCL RAS shows every rank at the same collective counts");

    // A CPU stall whose culprit's own counters lack the collective stands; the report is context.
    Diagnosis cpu = cpuStall(5);
    Diagnosis kept = ContextRules.apply(cpu, job(node("", finding(ContextFinding.Kind.RAS_CONSISTENT, "", -1,
        -1, "", 0, "", "RUNNING, OK", "ras:12"))));
    assertThat(kept.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(kept.evidence()).extracting(Evidence::kind).endsWith(Evidence.Kind.RAS_CONSISTENT);
  }

  @Test
  void aConsistentRasReportNeverTurnsATimeoutIntoNoHang() {
    Diagnosis out = ContextRules.apply(undecided(), logsOnly(node("", finding(ContextFinding.Kind.RAS_CONSISTENT,
        "", -1, -1, "", 0, "", "RUNNING, OK", "ras:12"))));

    assertThat(out.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(out.symptom()).isEqualTo(Symptom.UNKNOWN);
    assertThat(out.evidence()).extracting(Evidence::kind).contains(Evidence.Kind.RAS_CONSISTENT);
  }

  @Test
  void aCompletionErrorThatCannotTellADeadPeerFromTheFabricIsInsufficientAndSaysWhatToCollect() {
    Diagnosis out = ContextRules.apply(undecided(), logsOnly(node("i-0db7083f3fcbebb65",
        finding(ContextFinding.Kind.PEER_PATH_ERROR, "i-0db7083f3fcbebb65", -1, -1, "", 0, "i-0ce6d3d57139f053c",
            "EFA completion error towards peer host i-0ce6d3d57139f053c (err 5: Invalid address)", "log:1"))));

    assertThat(out.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(out.symptom()).isEqualTo(Symptom.UNKNOWN);
    assertThat(out.confidence()).isEqualTo(0.3);
    assertThat(out.culpritHosts()).isEmpty();
    assertThat(out.evidence()).extracting(Evidence::kind).containsExactly(Evidence.Kind.PEER_PATH_ERROR,
        Evidence.Kind.INSUFFICIENT);
    assertThat(out.headline()).isEqualTo("A transfer from i-0db7083f3fcbebb65 to i-0ce6d3d57139f053c failed (EFA "
        + "completion error towards peer host i-0ce6d3d57139f053c (err 5: Invalid address)), which does not tell a "
        + "dead peer from a network fault.");
    assertThat(out.recommendation()).contains("i-0ce6d3d57139f053c");
  }

  private static Diagnosis undecided() {
    return new Diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), List.of(), null, 0.3,
        List.of(new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), "no rank's records, dump or watchdog line")),
        List.of(), List.of(), List.of(), "Nothing here says how the ranks stand.", "Collect more evidence.", 0);
  }

  private static JobEvidence logsOnly(NodeContext... context) {
    return new JobEvidence("job", 1, List.of(), 0, Duration.ofSeconds(1), List.of(context));
  }

  /** {@link #job} whose ranks also name their pids (100 + rank) and GPUs (0000:1b:00.0 … by device). */
  private static JobEvidence jobWithBusIds(NodeContext... context) {
    List<RankEvidence> ranks = new ArrayList<>();
    String[] bus = {"0000:1b:00.0", "0000:dc:00.0", "0000:ba:00.0", "0000:97:00.0"};
    for (int r = 0; r < WORLD; r++) {
      ranks.add(new RankEvidence(r, RankIdentity.newBuilder().setGlobalRank(r).setHostname(r < 4 ? "node-a"
          : "node-b").setCudaDevice(r % 4).setPid(4339 + r).setGpuBusId(bus[r % 4]).build(), Liveness.ALIVE,
          true, "", List.of(), List.of(), List.of(), List.of(), Map.of()));
    }
    return new JobEvidence("job", WORLD, ranks, 0, Duration.ofSeconds(1), List.of(context));
  }

  private static ContextFinding died(String host, int rank, int pid, String detail) {
    return ContextFinding.newBuilder().setKind(ContextFinding.Kind.PROCESS_DIED).setHost(host).setRank(rank)
        .setDevice(-1).setPid(pid).setDetail(detail).setSource("log:1").build();
  }

  private static ContextFinding xid(ContextFinding.Kind kind, String host, int pid, String bus, String detail) {
    return ContextFinding.newBuilder().setKind(kind).setHost(host).setRank(-1).setDevice(-1).setPid(pid)
        .setGpuBusId(bus).setDetail(detail).setSource("kern.log:1").build();
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
