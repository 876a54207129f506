package dev.frdiag.analysis;

import static dev.frdiag.analysis.NodeFindings.hosts;
import static dev.frdiag.analysis.NodeFindings.peerHost;
import static dev.frdiag.analysis.NodeFindings.ranksOf;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Weighs what nodes' NCCL logs and InfiniBand counters say against the verdict the ranks' records gave.
 *
 * <p>The rules, strongest first: a CUDA failure or out-of-memory makes its rank a GPU culprit even when peers
 * log network errors (those are consequences); so does a GPU fault the driver logged (Xid) on a rank's GPU, and
 * without a rank it is at least a lead; a process that died from outside or crashed is a dead rank, and the
 * network errors its peers log follow from it; a NIC/GPUDirect fault local to one host is {@code NODE_NETWORK}
 * on that host; link faults (IB status 12, link_downed, port errors) confirm a fabric verdict and name the host,
 * NIC and port; ranks NCCL RAS shows behind in launched collectives are host-side stragglers. What no rule decides
 * is {@link QuotedContext}'s: findings quoted after the verdict, no sign of a hang, counters that did not move.
 * Evidence quotes the line or counter delta each finding rests on.
 */
final class ContextRules {
  /** Findings quoted in the evidence; the rest are counted. */
  static final int QUOTED = 6;

  private ContextRules() {}

  /** One rule: the diagnosis it makes of {@code d}, or null when it does not apply. */
  @FunctionalInterface
  private interface Rule {
    Diagnosis apply(Diagnosis d, JobEvidence job, NodeFindings f);
  }

  /** The rules, strongest first; the first that applies decides (docs/DIAGNOSIS.md, "Context rules"). */
  private static final List<Rule> RULES = List.of(ContextRules::cudaFailure, ContextRules::gpuXid,
      ContextRules::opMismatch, ContextRules::processDied, ContextRules::localNicFault, ContextRules::linkFault, ContextRules::launchLag,
      ContextRules::enqueueLagAlone, ContextRules::deadPeer, ContextRules::peerPathError, ContextRules::rasRefutes);

  /** {@code d} weighed against the job's node findings: the first rule that applies decides, else they are quoted. */
  static Diagnosis apply(Diagnosis d, JobEvidence job) {
    NodeFindings f = NodeFindings.of(d, job);
    if (f == null) {
      return d;
    }
    for (Rule rule : RULES) {
      Diagnosis out = rule.apply(d, job, f);
      if (out != null) {
        return out;
      }
    }
    return QuotedContext.apply(d, job, f);
  }

  /** What a dead GPU or process leaves behind on its peers: quoted after the cause, not weighed against it. */
  private static List<Evidence> fallout(NodeFindings f, JobEvidence job) {
    List<Evidence> fallout = new ArrayList<>(quote(Evidence.Kind.LOCAL_NIC_FAULT, f.nic, job));
    fallout.addAll(quote(Evidence.Kind.LINK_FAULT, f.link, job));
    fallout.addAll(quote(Evidence.Kind.DEAD_PEER, f.dead, job));
    return fallout;
  }

  /** A CUDA failure or out-of-memory makes its rank a GPU culprit; network errors its peers log are consequences. */
  private static Diagnosis cudaFailure(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> gpu = f.gpu;
    Symptom s = d.symptom();
    if (gpu.isEmpty() || s == Symptom.MISMATCH || !(f.undecided || s == Symptom.FABRIC || s == Symptom.NODE_NETWORK
        || s == Symptom.GPU_STALL || involves(d, ranksOf(gpu, job)))) {
      return null;
    }
    List<Integer> ranks = ranksOf(gpu, job);
    List<String> hosts = hosts(gpu);
    if (ranks.isEmpty() && hosts.isEmpty() && s == Symptom.GPU_STALL && !d.culpritRanks().isEmpty()) {
      // A failure that names no one adds nothing to a GPU verdict that already names its rank.
      return null;
    }
    String who = ranks.isEmpty() ? (hosts.isEmpty() ? "A GPU of the job" : "A GPU on " + String.join(", ", hosts))
        : Wording.capitalize(Wording.who(ranks)) + (hosts.isEmpty() ? "" : " (" + String.join(", ", hosts) + ")");
    // A failure that names neither rank nor host says a GPU failed, not which: the cause, without its culprit.
    double sure = ranks.isEmpty() && hosts.isEmpty() ? 0.5 : 0.95;
    return rewrite(d, Verdict.HANG, Symptom.GPU_STALL, ranks, hosts, sure,
        who + " hit a CUDA failure (" + brief(gpu.get(0)) + "): GPU fault; network errors its peers log are "
            + "consequences.", quote(Evidence.Kind.GPU_FAULT, gpu, job), Wording.recommendation(Symptom.GPU_STALL));
  }

  /**
   * Members of one communicator enqueued different collectives at one opCount (NCCL's COLL lines, printed as each
   * is enqueued, on the CPU side): the program diverged, and the communicator can never complete that collective.
   * The divergent members are the minority; on a tie none is named.
   */
  private static Diagnosis opMismatch(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> mismatch = f.opMismatch;
    if (mismatch.isEmpty() || !(f.undecided || d.symptom() == Symptom.MISMATCH || d.symptom() == Symptom.CPU_STALL)) {
      return null;
    }
    List<Integer> ranks = ranksOf(mismatch, job);
    return rewrite(d, Verdict.HANG, Symptom.MISMATCH, ranks, List.of(), 0.7, "Members of one communicator "
        + "enqueued different collectives at one opCount (" + brief(mismatch.get(0)) + "): program mismatch.",
        quote(Evidence.Kind.SIGNATURE_MISMATCH, mismatch, job), Wording.recommendation(Symptom.MISMATCH));
  }

  /**
   * A process that died from outside (a kill signal, the OOM killer) or crashed is where the hang starts: its
   * peers' transfers to it fail (IB retries exhausted towards its destroyed queue pairs, sockets reset), so the
   * network errors they log are the expected fallout, not a second fault.
   */
  private static Diagnosis processDied(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> died = f.died;
    Symptom s = d.symptom();
    if (died.isEmpty() || !(f.undecided || s == Symptom.FABRIC || s == Symptom.NODE_NETWORK)) {
      return null;
    }
    List<Integer> ranks = ranksOf(died, job);
    List<String> hosts = hosts(died);
    List<Evidence> first = new ArrayList<>(quote(Evidence.Kind.PROCESS_DIED, died, job));
    first.addAll(fallout(f, job));
    return rewrite(d, Verdict.HANG, Symptom.DEAD_RANK, ranks, hosts, ranks.isEmpty() ? 0.4 : 0.7,
        processes(died, ranks, hosts) + " died (" + brief(died.get(0)) + "): a process of the job went away; the "
            + "network errors its peers log follow from it.", first, Wording.recommendation(Symptom.DEAD_RANK));
  }

  /** A NIC, GPUDirect RDMA or PCIe fault local to one host is {@code NODE_NETWORK} on that host. */
  private static Diagnosis localNicFault(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> nic = f.nic;
    Symptom s = d.symptom();
    if (nic.isEmpty() || !(f.undecided || s == Symptom.FABRIC || s == Symptom.GPU_STALL && d.confidence() < 0.8)) {
      return null;
    }
    List<String> hosts = hosts(nic);
    List<Integer> ranks = ranksOf(nic, job);
    return rewrite(d, Verdict.HANG, Symptom.NODE_NETWORK, ranks, hosts, 0.85, "The network path of "
        + (hosts.isEmpty() ? "a host of the job" : String.join(", ", hosts)) + " failed locally ("
        + brief(nic.get(0)) + "): " + (nic.get(0).getDetail().contains("shared-memory")
            ? "NCCL's shared memory" : "NIC, GPUDirect RDMA or PCIe") + " on that host, not the fabric.",
        quote(Evidence.Kind.LOCAL_NIC_FAULT, nic, job),
        Wording.recommendation(Symptom.NODE_NETWORK));
  }

  /** Link faults (IB status 12, link_downed, port errors) confirm a fabric verdict and name the host, NIC and port. */
  private static Diagnosis linkFault(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> link = f.link;
    if (link.isEmpty() || !(f.undecided || d.symptom() == Symptom.FABRIC)) {
      return null;
    }
    List<String> hosts = new ArrayList<>(hosts(link));
    link.stream().map(ContextFinding::getPeer).filter(p -> !p.isEmpty()).map(NodeFindings::peerHost).distinct()
        .filter(p -> !hosts.contains(p)).forEach(hosts::add);
    ContextFinding first = link.get(0);
    String local = first.getHost() + (first.getNic().isEmpty() ? "" : " " + first.getNic()
        + (first.getPort() > 0 ? " port " + first.getPort() : ""));
    String peer = first.getPeer().isEmpty() ? "" : "peer " + peerHost(first.getPeer());
    // A WARN PyTorch quoted after "Last error:" has no prefix: only the peer end of the link is known.
    String where = local.isBlank() ? "The link to " + peer : "The link between " + local
        + (peer.isEmpty() ? "" : " and " + peer);
    return rewrite(d, Verdict.HANG, Symptom.FABRIC, List.of(), hosts, 0.85, where + " failed (" + brief(first)
        + "): fabric, no rank diverged.", quote(Evidence.Kind.LINK_FAULT, link, job),
        Wording.recommendation(Symptom.FABRIC));
  }

  /**
   * A peer closed or reset its sockets or stopped receiving, and nothing stronger (a CUDA fault, a local NIC or link
   * fault) explains it: the process at the other end went away. Logs alone, so weak.
   */
  private static Diagnosis deadPeer(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> dead = f.dead;
    if (dead.isEmpty() || !f.undecided) {
      return null;
    }
    List<String> peers = dead.stream().map(ContextFinding::getPeer).filter(p -> !p.isEmpty())
        .map(NodeFindings::peerHost).distinct().sorted().toList();
    String who = peers.isEmpty() ? "A peer of " + String.join(", ", hosts(dead)) : "The peer at "
        + String.join(", ", peers);
    return rewrite(d, Verdict.HANG, Symptom.DEAD_RANK, List.of(), peers, 0.4, who + " went away ("
        + brief(dead.get(0)) + "): a rank died or was killed; its peers' errors follow from it.",
        quote(Evidence.Kind.DEAD_PEER, dead, job), Wording.recommendation(Symptom.DEAD_RANK));
  }

  /**
   * A CPU stall without culprit is an inference: some member must never have issued the collective the others ran
   * ahead of. RAS compares every rank's count of launched collectives on every communicator; equal counts say no
   * rank is behind in launching, which refutes the inference. The hang is then on the device or network side, which
   * the evidence does not show.
   */
  private static Diagnosis rasRefutes(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> consistent = f.consistent;
    if (consistent.isEmpty() || d.verdict() != Verdict.HANG || d.symptom() != Symptom.CPU_STALL
        || !d.culpritRanks().isEmpty()) {
      return null;
    }
    List<Evidence> first = new ArrayList<>(quote(Evidence.Kind.RAS_CONSISTENT, consistent, job));
    Diagnosis out = rewrite(d, Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), List.of(), 0.3,
        "NCCL RAS shows every rank at the same collective counts, so no rank failed to launch a collective its "
            + "peers launched: the stuck collective is held up on the GPU or network side, which the evidence "
            + "does not show.", first, "Collect more evidence: " + VerdictRules.MISSING_AFTER_TIMEOUT + ".");
    return withMissing(out, VerdictRules.MISSING_AFTER_TIMEOUT);
  }

  /**
   * A GPU fault the NVIDIA driver logged (Xid), or null when it changes nothing. On a GPU a rank used (its pid or
   * GPU bus id on that host) it makes that rank the GPU culprit, as a CUDA failure does; a device fault is the
   * driver's own word on the hardware (0.85), an application fault usually the program's (0.7). On no known rank's
   * GPU it is a lead, not a culprit: an undecided verdict becomes insufficient evidence of a GPU stall.
   */
  private static Diagnosis gpuXid(Diagnosis d, JobEvidence job, NodeFindings found) {
    List<ContextFinding> xid = found.xid;
    Symptom s = d.symptom();
    if (xid.isEmpty() || s == Symptom.MISMATCH) {
      return null;
    }
    boolean undecided = found.undecided;
    List<Evidence> fallout = new ArrayList<>(quote(Evidence.Kind.PROCESS_DIED, found.died, job));
    fallout.addAll(fallout(found, job));
    List<Integer> ranks = ranksOf(xid, job);
    List<ContextFinding> device = xid.stream()
        .filter(f -> f.getKind() == ContextFinding.Kind.XID_DEVICE_FAULT).toList();
    if (!ranks.isEmpty() && (undecided || s == Symptom.FABRIC || s == Symptom.NODE_NETWORK
        || s == Symptom.GPU_STALL || involves(d, ranks))) {
      List<ContextFinding> onRanks = xid.stream().filter(f -> !ranksOf(List.of(f), job).isEmpty()).toList();
      boolean deviceFault = onRanks.stream().anyMatch(f -> f.getKind() == ContextFinding.Kind.XID_DEVICE_FAULT);
      List<String> hosts = ranks.stream().map(r -> hostOf(job, r)).filter(h -> !h.isEmpty()).distinct().sorted()
          .toList();
      String who = Wording.capitalize(Wording.who(ranks)) + (hosts.isEmpty() ? "" : " (" + String.join(", ", hosts)
          + ")");
      ContextFinding first = onRanks.stream().filter(f -> !deviceFault
          || f.getKind() == ContextFinding.Kind.XID_DEVICE_FAULT).findFirst().orElseThrow();
      String what = deviceFault ? "a fault of " + (ranks.size() == 1 ? "its GPU" : "their GPUs") + " ("
          + brief(first) + "): GPU fault"
          : "a fault in " + (ranks.size() == 1 ? "its own" : "their own") + " GPU work (" + brief(first)
              + "): most likely the program (an illegal memory access), else the GPU";
      return rewrite(d, Verdict.HANG, Symptom.GPU_STALL, ranks, hosts, deviceFault ? 0.85 : 0.7, who
          + ": the NVIDIA driver logged " + what + "; network errors its peers log are consequences.",
          withFallout(quote(Evidence.Kind.GPU_XID, onRanks, job), fallout), Wording.recommendation(Symptom.GPU_STALL));
    }
    if (!ranks.isEmpty() || !(d.verdict() == Verdict.INSUFFICIENT_EVIDENCE
        || d.verdict() == Verdict.HANG && s == Symptom.UNKNOWN
        || d.verdict() == Verdict.NO_HANG && d.confidence() < 0.9)) {
      return null;
    }
    // The driver names the GPU and the process that used it, but nothing here joins them to a rank.
    List<ContextFinding> lead = device.isEmpty() ? xid : device;
    List<String> gpus = lead.stream().map(ContextFinding::getGpuBusId).filter(b -> !b.isEmpty()).distinct()
        .sorted().toList();
    List<String> pids = lead.stream().filter(f -> f.getPid() > 0).map(f -> Long.toString(f.getPid())).distinct()
        .sorted().toList();
    String onGpus = gpus.isEmpty() ? "" : " on GPU" + (gpus.size() == 1 ? " " : "s ") + String.join(", ", gpus);
    String ofPids = pids.isEmpty() ? "" : (pids.size() == 1 ? "pid " : "pids ") + String.join(", ", pids);
    Diagnosis out = rewrite(d, Verdict.INSUFFICIENT_EVIDENCE, Symptom.GPU_STALL, List.of(), hosts(lead), 0.4,
        "The NVIDIA driver logged " + (device.isEmpty() ? "faults in GPU work" : "GPU faults") + " ("
            + brief(lead.get(0)) + ")" + onGpus + (pids.isEmpty() ? "" : " of process" + (pids.size() == 1 ? " " : "es ")
            + String.join(", ", pids)) + ", but nothing here says which ranks ran there.",
        withFallout(quote(Evidence.Kind.GPU_XID, xid, job), fallout), "Find which ranks ran "
            + (pids.isEmpty() ? "on those GPUs"
            : "as " + ofPids) + " (the training or launcher log names each rank's pid and host, a Flight Recorder "
            + "dump its GPU) and add their logs or dumps; check GPU" + (gpus.size() == 1 ? " " : "s ")
            + (gpus.isEmpty() ? "on that node" : String.join(", ", gpus)) + " (nvidia-smi -q, the kernel log "
            + "before these lines) and drain the node if the fault repeats.");
    return withMissing(out, "which ranks used " + (gpus.isEmpty() ? "the faulty GPUs" : String.join(", ", gpus))
        + (pids.isEmpty() ? "" : " (" + ofPids + ")") + ": no rank's evidence names its pid or GPU");
  }

  /**
   * Ranks RAS shows behind their peers in launched collectives: "launched up to operation K" counts the
   * collectives each rank launched on the communicator, so the ranks at the lower count never launched the next
   * one their peers did: host-side stragglers (CPU side), and the ranks ahead wait for them. One snapshot; a
   * spread that stays while RAS is queried again settles it, which is why it is weak alone.
   */
  private static Diagnosis launchLag(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> lag = f.lag;
    // A NO_HANG from records (every group seen moving) outweighs one RAS snapshot, which may catch ranks mid-way.
    if (lag.isEmpty() || !((f.undecided && !(d.verdict() == Verdict.NO_HANG && d.confidence() >= 0.9))
        || (d.symptom() == Symptom.CPU_STALL && d.culpritRanks().isEmpty()))) {
      return null;
    }
    List<Integer> ranks = ranksOf(lag, job);
    List<String> hosts = hosts(lag);
    double confidence = d.symptom() == Symptom.CPU_STALL && d.verdict() == Verdict.HANG
        ? Math.max(d.confidence(), 0.4) : 0.4;
    String headline;
    if (ranks.isEmpty() && hosts.isEmpty()) {
      headline = "NCCL RAS shows ranks behind their peers in launched collectives (" + brief(lag.get(0)) + "): the "
          + "ranks behind never issued the next collective (CPU side); the ranks ahead wait for them.";
    } else {
      String who = ranks.isEmpty() ? "Processes on " + String.join(", ", hosts)
          : Wording.capitalize(Wording.who(ranks)) + (hosts.isEmpty() ? "" : " (" + String.join(", ", hosts) + ")");
      boolean one = ranks.size() == 1;
      headline = who + " launched fewer collectives than " + (one ? "its" : "their") + " peers (" + brief(lag.get(0))
          + "): " + (one ? "it" : "they") + " never issued the next collective (CPU side); " + (one ? "its" : "their")
          + " peers wait for " + (one ? "it." : "them.");
    }
    String recommendation = ranks.isEmpty() && hosts.isEmpty()
        ? "Query RAS again (ncclras): counts that stay put confirm the stall. The ranks behind are those RAS does not "
            + "list as ahead; inspect one's Python stack (py-spy dump --pid PID) for what it is blocked on instead of "
            + "the collective: data loading, a lock, I/O, or a code path only some ranks take."
        : Wording.recommendation(Symptom.CPU_STALL);
    return rewrite(d, Verdict.HANG, Symptom.CPU_STALL, ranks, hosts, confidence, headline,
        quote(Evidence.Kind.LAUNCH_LAG, lag, job), recommendation);
  }

  /**
   * COLL lines where some processes stopped enqueuing before their peers, and nothing says the job hung: the best
   * reading is a host-side straggler, but a log cut from a running job looks the same (ranks launch
   * asynchronously), so it names no culprit until a timeout or a stall says the job stopped there.
   */
  private static Diagnosis enqueueLagAlone(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> lag = f.enqueueLag;
    if (lag.isEmpty() || !f.undecided || d.verdict() == Verdict.NO_HANG && d.confidence() >= 0.9) {
      return null;
    }
    List<Integer> ranks = ranksOf(lag, job);
    List<String> hosts = hosts(lag);
    String who = ranks.isEmpty() ? "Processes on " + String.join(", ", hosts)
        : Wording.capitalize(Wording.who(ranks)) + (hosts.isEmpty() ? "" : " (" + String.join(", ", hosts) + ")");
    return rewrite(d, Verdict.INSUFFICIENT_EVIDENCE, Symptom.CPU_STALL, List.of(), List.of(), 0.3,
        "Probably: " + who + " stopped launching collectives before " + (ranks.size() == 1 ? "its" : "their")
            + " peers (" + brief(lag.get(0)) + "), a CPU-side straggler if the job hung; nothing here says it did.",
        quote(Evidence.Kind.LAUNCH_LAG, lag, job), "Collect more evidence: the ranks' watchdog lines or Flight "
            + "Recorder dumps, or an NCCL RAS report (ncclras) taken during the hang.");
  }

  /**
   * A completion error towards a named peer that cannot tell the peer's death from the path's failure: both make
   * the transfer fail the same way. It is evidence that something broke between two hosts, not a verdict.
   */
  private static Diagnosis peerPathError(Diagnosis d, JobEvidence job, NodeFindings f) {
    List<ContextFinding> peerPath = f.peerPath;
    if (peerPath.isEmpty() || !(d.verdict() == Verdict.INSUFFICIENT_EVIDENCE
        || d.verdict() == Verdict.HANG && d.symptom() == Symptom.UNKNOWN)) {
      return null;
    }
    ContextFinding first = peerPath.get(0);
    String peer = first.getPeer().isEmpty() ? "" : peerHost(first.getPeer());
    String from = first.getHost().isEmpty() ? "" : " from " + first.getHost();
    String missing = "whether the process on " + (peer.isEmpty() ? "the peer" : peer) + " died (its own log, the "
        + "launcher's exit lines, the kernel log's OOM killer) or the network path between the hosts failed (the "
        + "network's error counters), and the ranks' watchdog lines or Flight Recorder dumps";
    Diagnosis out = rewrite(d, Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), List.of(), 0.3,
        "A transfer" + from + (peer.isEmpty() ? "" : " to " + peer) + " failed (" + brief(first) + "), which does not "
            + "tell a dead peer from a network fault.", quote(Evidence.Kind.PEER_PATH_ERROR, peerPath, job),
        "Look at " + (peer.isEmpty() ? "the peer" : peer) + ": whether its process died (its log, the launcher's exit "
            + "lines, dmesg for the OOM killer); if it lived, check the network path between the hosts (the NICs' "
            + "error counters, the provider's logs). The ranks' watchdog lines or Flight Recorder dumps show where "
            + "the job stands.");
    return withMissing(out, missing);
  }

  private static List<Evidence> withFallout(List<Evidence> first, List<Evidence> fallout) {
    List<Evidence> out = new ArrayList<>(first);
    out.addAll(fallout);
    return out;
  }

  /** {@code d} with one more line saying what is missing to decide. */
  private static Diagnosis withMissing(Diagnosis d, String missing) {
    List<Evidence> evidence = new ArrayList<>(d.evidence());
    evidence.add(new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), missing));
    return new Diagnosis(d.verdict(), d.symptom(), d.culpritRanks(), d.culpritHosts(), d.collective(),
        d.confidence(), evidence, d.culprits(), d.stuck(), d.rankStates(), d.headline(), d.recommendation(),
        d.stuckSinceNs());
  }

  /** "Rank 6 (node-b)", "Process 90738 on 172.19.24.110", "Processes 1, 2 on h1, h2", "A process of the job". */
  private static String processes(List<ContextFinding> died, List<Integer> ranks, List<String> hosts) {
    String on = hosts.isEmpty() ? "" : (ranks.isEmpty() ? " on " : " (") + String.join(", ", hosts)
        + (ranks.isEmpty() ? "" : ")");
    if (!ranks.isEmpty()) {
      return Wording.capitalize(Wording.who(ranks)) + on;
    }
    List<String> pids = died.stream().filter(f -> f.getPid() > 0).map(f -> Long.toString(f.getPid())).distinct()
        .toList();
    if (pids.isEmpty()) {
      return hosts.isEmpty() ? "A process of the job" : "A process" + on;
    }
    return (pids.size() == 1 ? "Process " : "Processes ") + String.join(", ", pids) + on;
  }

  private static String hostOf(JobEvidence job, int rank) {
    return job.ranks().stream().filter(r -> r.rank() == rank).map(r -> r.identity().getHostname()).findFirst()
        .orElse("");
  }

  private static boolean involves(Diagnosis d, List<Integer> ranks) {
    return !ranks.isEmpty() && d.culpritRanks().stream().anyMatch(ranks::contains);
  }

  static Diagnosis rewrite(Diagnosis d, Verdict verdict, Symptom symptom, List<Integer> culprits,
      List<String> hosts, double confidence, String headline, List<Evidence> first, String recommendation) {
    List<Evidence> evidence = new ArrayList<>(first);
    evidence.addAll(d.evidence());
    if (d.verdict() == Verdict.INSUFFICIENT_EVIDENCE || d.verdict() == Verdict.NO_HANG && verdict == Verdict.HANG) {
      evidence.removeIf(e -> e.kind() == Evidence.Kind.INSUFFICIENT);
    }
    List<Culprit> details = d.culprits().stream().filter(c -> culprits.contains(c.rank())).toList();
    return new Diagnosis(verdict, symptom, culprits, hosts, d.collective(), confidence, evidence, details,
        d.stuck(), d.rankStates(), headline, recommendation, d.stuckSinceNs());
  }

  static List<Evidence> quote(Evidence.Kind kind, List<ContextFinding> findings, JobEvidence job) {
    List<Evidence> out = new ArrayList<>();
    // The same line repeated (a retrying NIC prints it every few seconds) is one fact.
    List<ContextFinding> distinct = new ArrayList<>();
    Set<String> seen = new java.util.HashSet<>();
    for (ContextFinding f : findings) {
      if (seen.add(f.getHost() + "|" + f.getNic() + "|" + f.getDetail())) {
        distinct.add(f);
      }
    }
    findings = distinct;
    for (ContextFinding f : findings.subList(0, Math.min(QUOTED, findings.size()))) {
      List<Integer> ranks = ranksOf(List.of(f), job);
      out.add(new Evidence(kind, ranks, f.getHost() + (f.getNic().isEmpty() ? "" : " " + f.getNic()
          + (f.getPort() > 0 ? ":" + f.getPort() : "")) + ": " + f.getDetail()
          + (f.getSource().isEmpty() ? "" : " [" + f.getSource() + "]")));
      if (f.getHost().isEmpty()) {
        out.set(out.size() - 1, new Evidence(kind, ranks, f.getDetail()
            + (f.getSource().isEmpty() ? "" : " [" + f.getSource() + "]")));
      }
    }
    if (findings.size() > QUOTED) {
      out.add(new Evidence(kind, List.of(), (findings.size() - QUOTED) + " more " + kind.wire().replace('_', ' ')
          + " findings"));
    }
    return out;
  }

  private static String brief(ContextFinding f) {
    String d = f.getDetail();
    int quote = d.indexOf(": \"");
    String s = quote > 0 ? d.substring(0, quote) : d;
    return s.length() > 120 ? s.substring(0, 117) + "..." : s;
  }
}
