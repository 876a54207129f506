package dev.frdiag.analysis;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Weighs what nodes' NCCL logs and InfiniBand counters say against the verdict the ranks' records gave.
 *
 * <p>The rules, strongest first: a CUDA failure or out-of-memory makes its rank a GPU culprit even when peers
 * log network errors (those are consequences); a NIC/GPUDirect fault local to one host is {@code NODE_NETWORK}
 * on that host; link faults (IB status 12, link_downed, port errors) confirm a fabric verdict and name the host,
 * NIC and port; with counters that did not move at all, a fabric verdict names no link and loses confidence.
 * Evidence quotes the line or counter delta each finding rests on.
 */
final class ContextRules {
  /** Findings quoted in the evidence; the rest are counted. */
  static final int QUOTED = 6;

  private ContextRules() {}

  static Diagnosis apply(Diagnosis d, JobEvidence job) {
    Map<ContextFinding.Kind, List<ContextFinding>> byKind = new EnumMap<>(ContextFinding.Kind.class);
    for (NodeContext node : job.context()) {
      for (ContextFinding f : node.getFindingsList()) {
        ContextFinding withHost = f.getHost().isEmpty() ? f.toBuilder().setHost(node.getHostname()).build() : f;
        byKind.computeIfAbsent(f.getKind(), k -> new ArrayList<>()).add(withHost);
      }
    }
    if (byKind.isEmpty()) {
      return d;
    }
    List<ContextFinding> gpu = byKind.getOrDefault(ContextFinding.Kind.GPU_FAULT, List.of());
    List<ContextFinding> nic = byKind.getOrDefault(ContextFinding.Kind.LOCAL_NIC_FAULT, List.of());
    List<ContextFinding> link = byKind.getOrDefault(ContextFinding.Kind.LINK_FAULT, List.of());
    List<ContextFinding> quiet = byKind.getOrDefault(ContextFinding.Kind.QUIET, List.of());
    boolean undecided = d.verdict() != Verdict.HANG || d.symptom() == Symptom.UNKNOWN;
    Symptom s = d.symptom();

    if (!gpu.isEmpty() && s != Symptom.MISMATCH && (undecided || s == Symptom.FABRIC || s == Symptom.NODE_NETWORK
        || s == Symptom.GPU_STALL || involves(d, ranksOf(gpu, job)))) {
      List<Integer> ranks = ranksOf(gpu, job);
      List<String> hosts = hosts(gpu);
      String who = ranks.isEmpty() ? "A GPU on " + String.join(", ", hosts)
          : Wording.capitalize(Wording.who(ranks)) + " (" + String.join(", ", hosts) + ")";
      return rewrite(d, Verdict.HANG, Symptom.GPU_STALL, ranks, hosts, 0.95,
          who + " hit a CUDA failure (" + brief(gpu.get(0)) + "): GPU fault; network errors its peers log are "
              + "consequences.", quote(Evidence.Kind.GPU_FAULT, gpu, job), Wording.recommendation(Symptom.GPU_STALL));
    }
    if (!nic.isEmpty() && (undecided || s == Symptom.FABRIC || s == Symptom.GPU_STALL && d.confidence() < 0.8)) {
      List<String> hosts = hosts(nic);
      List<Integer> ranks = ranksOf(nic, job);
      return rewrite(d, Verdict.HANG, Symptom.NODE_NETWORK, ranks, hosts, 0.85, "The network path of "
          + String.join(", ", hosts) + " failed locally (" + brief(nic.get(0)) + "): NIC, GPUDirect RDMA or PCIe "
          + "on that host, not the fabric.", quote(Evidence.Kind.LOCAL_NIC_FAULT, nic, job),
          Wording.recommendation(Symptom.NODE_NETWORK));
    }
    if (!link.isEmpty() && (undecided || s == Symptom.FABRIC)) {
      List<String> hosts = new ArrayList<>(hosts(link));
      link.stream().map(ContextFinding::getPeer).filter(p -> !p.isEmpty()).map(ContextRules::peerHost).distinct()
          .filter(p -> !hosts.contains(p)).forEach(hosts::add);
      ContextFinding first = link.get(0);
      String where = first.getHost() + (first.getNic().isEmpty() ? "" : " " + first.getNic()
          + (first.getPort() > 0 ? " port " + first.getPort() : ""))
          + (first.getPeer().isEmpty() ? "" : " and peer " + peerHost(first.getPeer()));
      return rewrite(d, Verdict.HANG, Symptom.FABRIC, List.of(), hosts, 0.85, "The link between " + where
          + " failed (" + brief(first) + "): fabric, no rank diverged.", quote(Evidence.Kind.LINK_FAULT, link, job),
          Wording.recommendation(Symptom.FABRIC));
    }
    List<ContextFinding> dead = byKind.getOrDefault(ContextFinding.Kind.DEAD_PEER, List.of());
    if (!dead.isEmpty() && undecided) {
      // A peer closed its sockets or NCCL's proxy reported a remote error, and nothing stronger (a CUDA fault, a
      // local NIC or link fault) explains it: the process at the other end went away. Logs alone, so weak.
      List<String> peers = dead.stream().map(ContextFinding::getPeer).filter(p -> !p.isEmpty())
          .map(ContextRules::peerHost).distinct().sorted().toList();
      String who = peers.isEmpty() ? "A peer of " + String.join(", ", hosts(dead)) : "The peer at "
          + String.join(", ", peers);
      return rewrite(d, Verdict.HANG, Symptom.DEAD_RANK, List.of(), peers, 0.4, who + " went away ("
          + brief(dead.get(0)) + "): a rank died or was killed; its peers' errors follow from it.",
          quote(Evidence.Kind.DEAD_PEER, dead, job), Wording.recommendation(Symptom.DEAD_RANK));
    }
    List<Evidence> extra = new ArrayList<>();
    extra.addAll(quote(Evidence.Kind.DEAD_PEER, dead, job));
    extra.addAll(quote(Evidence.Kind.CONGESTION, byKind.getOrDefault(ContextFinding.Kind.CONGESTION, List.of()),
        job));
    extra.addAll(quote(Evidence.Kind.NOTE, byKind.getOrDefault(ContextFinding.Kind.NOTE, List.of()), job));
    boolean faults = byKind.keySet().stream().anyMatch(k -> k != ContextFinding.Kind.NOTE
        && k != ContextFinding.Kind.QUIET && k != ContextFinding.Kind.CONGESTION
        && k != ContextFinding.Kind.HEALTHY_SETUP);
    if (!faults) {
      List<String> hosts = job.context().stream().map(NodeContext::getHostname).filter(h -> !h.isEmpty())
          .distinct().sorted().toList();
      extra.add(0, new Evidence(Evidence.Kind.NO_FAILURE_LOGGED, List.of(), "The NCCL logs" + (hosts.isEmpty() ? ""
          : " of " + String.join(", ", hosts)) + " show no failure (no WARN that points at a GPU, NIC or link)"));
      boolean everyNodeHealthy = job.context().stream().allMatch(n -> n.getFindingsList().stream()
          .anyMatch(f -> f.getKind() == ContextFinding.Kind.HEALTHY_SETUP));
      if (job.ranks().isEmpty() && d.verdict() == Verdict.INSUFFICIENT_EVIDENCE && everyNodeHealthy) {
        // Nothing from the ranks, and every node's NCCL log shows its communicators set up with not one line of
        // trouble: no sign of a hang. Weak, since a hang that prints nothing looks the same.
        return rewrite(d, Verdict.NO_HANG, Symptom.NONE, List.of(), List.of(), 0.4, "No sign of a hang: NCCL set "
            + "its communicators up and no line of the logs reports trouble; no rank's watchdog line or Flight "
            + "Recorder dump is here.", extra,
            "If the job did hang, add the ranks' training logs (watchdog lines) or Flight Recorder dumps.");
      }
    }
    if (s == Symptom.FABRIC && !quiet.isEmpty()) {
      // No error counter moved anywhere we can see: the fabric is not confirmed, so no link is named.
      extra.add(new Evidence(Evidence.Kind.QUIET_COUNTERS, List.of(), "No InfiniBand error, wait or "
          + "retransmission counter moved on " + String.join(", ", hosts(quiet)) + " during the hang: this points away from the fabric "
          + "(check the GPUs and NCCL logs of the members)"));
      return rewrite(d, d.verdict(), d.symptom(), d.culpritRanks(), List.of(), Math.min(d.confidence(), 0.4),
          d.headline(), extra, d.recommendation());
    }
    if (extra.isEmpty()) {
      return d;
    }
    // Context that changes nothing comes after the evidence the verdict rests on.
    List<Evidence> after = new ArrayList<>(d.evidence());
    after.addAll(extra);
    return new Diagnosis(d.verdict(), d.symptom(), d.culpritRanks(), d.culpritHosts(), d.collective(),
        d.confidence(), after, d.culprits(), d.stuck(), d.rankStates(), d.headline(), d.recommendation(),
        d.stuckSinceNs());
  }

  private static boolean involves(Diagnosis d, List<Integer> ranks) {
    return !ranks.isEmpty() && d.culpritRanks().stream().anyMatch(ranks::contains);
  }

  private static Diagnosis rewrite(Diagnosis d, Verdict verdict, Symptom symptom, List<Integer> culprits,
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

  private static List<Evidence> quote(Evidence.Kind kind, List<ContextFinding> findings, JobEvidence job) {
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

  /** The ranks findings are about: stated, or found by host and CUDA device among the ranks' identities. */
  static List<Integer> ranksOf(List<ContextFinding> findings, JobEvidence job) {
    Set<Integer> out = new TreeSet<>();
    for (ContextFinding f : findings) {
      if (f.getRank() >= 0) {
        out.add(f.getRank());
        continue;
      }
      if (f.getDevice() < 0) {
        continue;
      }
      for (RankEvidence r : job.ranks()) {
        if (r.identity().getHostname().equals(f.getHost()) && r.identity().getCudaDevice() == f.getDevice()) {
          out.add(r.rank());
        }
      }
    }
    return List.copyOf(out);
  }

  private static List<String> hosts(List<ContextFinding> findings) {
    return findings.stream().map(ContextFinding::getHost).filter(h -> !h.isEmpty()).distinct().sorted()
        .collect(Collectors.toList());
  }

  /** "10.0.0.7<54862>" as NCCL prints a peer: the address without the port. */
  static String peerHost(String peer) {
    int lt = peer.indexOf('<');
    return lt > 0 ? peer.substring(0, lt) : peer;
  }

  private static String brief(ContextFinding f) {
    String d = f.getDetail();
    int quote = d.indexOf(": \"");
    String s = quote > 0 ? d.substring(0, quote) : d;
    return s.length() > 120 ? s.substring(0, 117) + "..." : s;
  }
}
