package dev.frdiag.analysis;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/** A job's node findings by kind, each with its node's host, as {@link ContextRules} weighs them. */
final class NodeFindings {
  final Map<ContextFinding.Kind, List<ContextFinding>> byKind;
  final List<ContextFinding> gpu;
  final List<ContextFinding> nic;
  final List<ContextFinding> link;
  final List<ContextFinding> quiet;
  /** Device and application Xids. */
  final List<ContextFinding> xid;
  final List<ContextFinding> died;
  /** LAUNCH_LAG, and ENQUEUE_LAG once the job is known to have hung. */
  final List<ContextFinding> lag;
  /** COLL lines of one communicator that disagree at one opCount. */
  final List<ContextFinding> opMismatch;
  /** ENQUEUE_LAG while nothing says the job hung. */
  final List<ContextFinding> enqueueLag;
  final List<ContextFinding> consistent;
  final List<ContextFinding> peerPath;
  final List<ContextFinding> dead;
  /** The verdict is not HANG, or its symptom is UNKNOWN. */
  final boolean undecided;

  /** The findings of {@code job}'s nodes, or null when they have none. */
  static NodeFindings of(Diagnosis d, JobEvidence job) {
    Map<ContextFinding.Kind, List<ContextFinding>> byKind = new EnumMap<>(ContextFinding.Kind.class);
    for (NodeContext node : job.context()) {
      for (ContextFinding f : node.getFindingsList()) {
        ContextFinding withHost = f.getHost().isEmpty() ? f.toBuilder().setHost(node.getHostname()).build() : f;
        byKind.computeIfAbsent(f.getKind(), k -> new ArrayList<>()).add(withHost);
      }
    }
    return byKind.isEmpty() ? null : new NodeFindings(byKind, d, job);
  }

  private NodeFindings(Map<ContextFinding.Kind, List<ContextFinding>> byKind, Diagnosis d, JobEvidence job) {
    this.byKind = byKind;
    gpu = of(ContextFinding.Kind.GPU_FAULT);
    nic = of(ContextFinding.Kind.LOCAL_NIC_FAULT);
    link = of(ContextFinding.Kind.LINK_FAULT);
    quiet = of(ContextFinding.Kind.QUIET);
    xid = new ArrayList<>(of(ContextFinding.Kind.XID_DEVICE_FAULT));
    xid.addAll(of(ContextFinding.Kind.XID_APPLICATION_FAULT));
    died = of(ContextFinding.Kind.PROCESS_DIED);
    lag = new ArrayList<>(of(ContextFinding.Kind.LAUNCH_LAG));
    opMismatch = of(ContextFinding.Kind.OP_MISMATCH);
    if (hangShown(d, job)) {
      // Where each process stopped enqueuing is where it stands only once the job is known to have stopped.
      lag.addAll(of(ContextFinding.Kind.ENQUEUE_LAG));
      enqueueLag = List.of();
    } else {
      enqueueLag = of(ContextFinding.Kind.ENQUEUE_LAG);
    }
    consistent = of(ContextFinding.Kind.RAS_CONSISTENT);
    peerPath = of(ContextFinding.Kind.PEER_PATH_ERROR);
    dead = of(ContextFinding.Kind.DEAD_PEER);
    undecided = d.verdict() != Verdict.HANG || d.symptom() == Symptom.UNKNOWN;
  }

  List<ContextFinding> of(ContextFinding.Kind kind) {
    return byKind.getOrDefault(kind, List.of());
  }

  /**
   * True when some finding is a fault, not a note, quiet or congested counters, a healthy setup or a clean
   * teardown, RAS agreeing or collectives completing.
   */
  boolean faults() {
    return byKind.keySet().stream().anyMatch(k -> k != ContextFinding.Kind.NOTE
        && k != ContextFinding.Kind.QUIET && k != ContextFinding.Kind.CONGESTION
        && k != ContextFinding.Kind.HEALTHY_SETUP && k != ContextFinding.Kind.RAS_CONSISTENT
        && k != ContextFinding.Kind.PROGRESS && k != ContextFinding.Kind.CLEAN_TEARDOWN);
  }

  /**
   * The ranks findings are about: stated, or found among the ranks' identities on the finding's host by CUDA
   * device, process id or GPU bus id (the driver prints "0000:dc:00", a rank's identity "0000:dc:00.0"). A pid or
   * bus id is only unique on one host, so a finding without a host maps to no rank by them.
   */
  static List<Integer> ranksOf(List<ContextFinding> findings, JobEvidence job) {
    Set<Integer> out = new TreeSet<>();
    for (ContextFinding f : findings) {
      if (f.getRank() >= 0) {
        out.add(f.getRank());
        continue;
      }
      String bus = f.getGpuBusId().toLowerCase(Locale.ROOT);
      for (RankEvidence r : job.ranks()) {
        RankIdentity id = r.identity();
        if (f.getHost().isEmpty() || !id.getHostname().equals(f.getHost())) {
          continue;
        }
        if (f.getDevice() >= 0 && id.getCudaDevice() == f.getDevice()
            || f.getPid() > 0 && id.getPid() == f.getPid()
            || !bus.isEmpty() && id.getGpuBusId().toLowerCase(Locale.ROOT).startsWith(bus)) {
          out.add(r.rank());
        }
      }
    }
    return List.copyOf(out);
  }

  static List<String> hosts(List<ContextFinding> findings) {
    return findings.stream().map(ContextFinding::getHost).filter(h -> !h.isEmpty()).distinct().sorted()
        .collect(Collectors.toList());
  }

  /** "10.0.0.7<54862>" as NCCL prints a peer: the address without the port. */
  static String peerHost(String peer) {
    int lt = peer.indexOf('<');
    return lt > 0 ? peer.substring(0, lt) : peer;
  }

  /** True when the evidence shows the job hung: a verdict of HANG, or a rank's watchdog timed out or stopped. */
  private static boolean hangShown(Diagnosis d, JobEvidence job) {
    return d.verdict() == Verdict.HANG || job.ranks().stream().flatMap(r -> r.events().stream())
        .anyMatch(e -> e.getKind() == RankEvent.Kind.WATCHDOG_TIMEOUT || e.getKind() == RankEvent.Kind.WATCHDOG_STUCK);
  }
}
