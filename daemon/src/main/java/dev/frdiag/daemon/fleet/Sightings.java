package dev.frdiag.daemon.fleet;

import dev.frdiag.analysis.FabricMap;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.daemon.store.StoredReport;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Which parts one report blames or marks; a pure function of the report's summary (what the store keeps of it).
 *
 * <p>Only hangs count, and not a program mismatch: ranks that issued different collectives do so on any host, so
 * their hosts are not at fault; nor a hang that ended by itself (docs/DIAGNOSIS.md, "Fleet memory"). A culprit host counts as a culprit; its GPU
 * too when the verdict is a GPU stall. What the node findings of a network verdict mark (a host, a GPU, a NIC, a
 * port, the link to a named peer) counts as marked. A part both blamed and marked counts once, as a culprit.
 */
public final class Sightings {
  /** The most parts one report may name: a report of a fault everywhere says nothing about any one part. */
  static final int MAX_PER_REPORT = 64;

  private Sightings() {}

  /** How a report named a part. */
  public enum Role {
    /** A culprit host, or the GPU of a culprit of a GPU stall. */
    CULPRIT,
    /** A part a failing node finding names (a link down, a NIC error, an Xid). */
    MARKED
  }

  /** The parts {@code report} names, each once, culprits first; empty for reports that blame no hardware. */
  public static Map<Part, Role> of(StoredReport report) {
    return counts(report) ? named(report) : new TreeMap<>();
  }

  /**
   * The parts {@code report} names whether or not fleet memory counts it: those a hang's report counted before the
   * hang ended by itself.
   */
  static Map<Part, Role> named(StoredReport report) {
    Map<Part, Role> parts = new TreeMap<>();
    for (String host : report.culpritHosts()) {
      if (known(host)) {
        parts.put(Part.host(host), Role.CULPRIT);
      }
    }
    if (report.symptom() == Symptom.GPU_STALL) {
      for (StoredReport.Gpu g : report.culpritGpus()) {
        if (known(g.host())) {
          parts.put(gpu(g.host(), g.device()), Role.CULPRIT);
        }
      }
    }
    FabricMap fabric = report.fabric();
    if (fabric != null) {
      for (FabricMap.Host h : fabric.hosts()) {
        if (!known(h.name())) {
          continue;
        }
        mark(parts, Part.host(h.name()), h.marks());
        marksWithPeers(parts, h.name(), "", h.marks());
        for (FabricMap.Gpu g : h.gpus()) {
          if (g.device() >= 0) {
            mark(parts, gpu(h.name(), g.device()), g.marks());
          }
        }
        for (FabricMap.Nic nic : h.nics()) {
          mark(parts, new Part(Part.Kind.NIC, h.name(), nic.name()), nic.marks());
          marksWithPeers(parts, h.name(), nic.name(), nic.marks());
          for (FabricMap.Port p : nic.ports()) {
            String port = nic.name() + "/" + p.number();
            mark(parts, new Part(Part.Kind.PORT, h.name(), port), p.marks());
            marksWithPeers(parts, h.name(), port, p.marks());
          }
        }
      }
    }
    if (parts.size() > MAX_PER_REPORT) {
      Map<Part, Role> kept = new TreeMap<>();
      parts.entrySet().stream().filter(e -> e.getValue() == Role.CULPRIT).limit(MAX_PER_REPORT)
          .forEach(e -> kept.put(e.getKey(), e.getValue()));
      parts.entrySet().stream().filter(e -> e.getValue() == Role.MARKED).limit(MAX_PER_REPORT - kept.size())
          .forEach(e -> kept.put(e.getKey(), e.getValue()));
      return kept;
    }
    return parts;
  }

  /**
   * True for the reports fleet memory reads: hangs blaming something other than the program, and not one that ended
   * by itself (a slowdown: nothing in it failed for good).
   */
  static boolean counts(StoredReport report) {
    return report.verdict() == Verdict.HANG && report.symptom() != Symptom.MISMATCH && report.recoveredAt() == null;
  }

  private static Part gpu(String host, int device) {
    return new Part(Part.Kind.GPU, host, "cuda:" + device);
  }

  private static void mark(Map<Part, Role> parts, Part part, List<FabricMap.Mark> marks) {
    if (FabricMap.failing(marks)) {
      parts.putIfAbsent(part, Role.MARKED);
    }
  }

  /** Links: a failing finding on {@code on} (a port, a NIC, or the host when empty) that names its far end. */
  private static void marksWithPeers(Map<Part, Role> parts, String host, String on, List<FabricMap.Mark> marks) {
    List<String> peers = new ArrayList<>();
    for (FabricMap.Mark m : marks) {
      String peer = peer(m.peer());
      if (m.failing() && !peer.isEmpty() && !peers.contains(peer)) {
        peers.add(peer);
        parts.putIfAbsent(new Part(Part.Kind.LINK, host, (on.isEmpty() ? "" : on + " ") + "-> " + peer),
            Role.MARKED);
      }
    }
  }

  /** The far end without the connection's own port ({@code 10.0.35.1<49189>} is {@code 10.0.35.1}). */
  static String peer(String peer) {
    int angle = peer.indexOf('<');
    return (angle >= 0 ? peer.substring(0, angle) : peer).strip();
  }

  private static boolean known(String host) {
    return host != null && !host.isEmpty() && !host.equals("?");
  }
}
