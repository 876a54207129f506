package dev.frdiag.readers.nccl;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The {@code === System : maxBw …} topology dumps NCCL prints at init ({@code NCCL_DEBUG_SUBSYS=GRAPH}): each
 * process's dump as its lines arrive, and a dump pasted without the line prefixes. Every rank of a host prints the
 * same dump; the first per host is kept.
 */
final class TopologyDumps {
  private final VersionClues clues;
  private final int maxEntries;
  private final List<NcclTopology> topologies = new ArrayList<>();
  private final Set<String> hosts = new HashSet<>();
  private TopologyBuilder pasted;

  TopologyDumps(VersionClues clues, int maxEntries) {
    this.clues = clues;
    this.maxEntries = maxEntries;
  }

  /** True when the message at {@code ms} starts a dump (cheap check before {@link #start}). */
  static boolean isHeader(String s, int ms) {
    return TopologyBuilder.isHeader(s, ms);
  }

  /** Opens {@code p}'s dump when the message at {@code ms} is a well-formed header. */
  void start(ProcessState p, String s, int ms, int tid, long lineNumber) {
    p.topology = TopologyBuilder.start(s, ms, p.host, p.pid, tid, lineNumber);
  }

  /**
   * Feeds a prefixed line of thread {@code tid} to {@code p}'s open dump; true when the dump took it. Other threads
   * of the process may print between the dump's lines; only the dumping thread's lines count, and the first line
   * of that thread that is not part of the dump closes it.
   */
  boolean continued(ProcessState p, String s, int ms, int tid) {
    TopologyBuilder t = p.topology;
    if (t.tid != tid) {
      return false;
    }
    if (!t.accept(s, ms)) {
      close(p);
      return false;
    }
    if (t.complete()) {
      close(p);
    }
    return true;
  }

  /** Feeds an unprefixed line to the open pasted dump; true when the dump took it. */
  boolean continuedPasted(String s) {
    if (pasted == null) {
      return false;
    }
    if (pasted.accept(s, 0)) {
      if (pasted.complete()) {
        closePasted();
      }
      return true;
    }
    closePasted();
    return false;
  }

  /** Opens a pasted dump when {@code s} is a header after optional spaces; true when it did. */
  boolean startPasted(String s, long lineNumber) {
    int i = 0;
    while (i < s.length() && s.charAt(i) == ' ') {
      i++;
    }
    if (!TopologyBuilder.isHeader(s, i)) {
      return false;
    }
    pasted = TopologyBuilder.start(s, i, "", -1, -1, lineNumber);
    return pasted != null;
  }

  /** Closes the dumps still open at the end of the log and returns all, pasted ones first. */
  List<NcclTopology> finish(Collection<ProcessState> processes) {
    if (pasted != null) {
      closePasted();
    }
    for (ProcessState p : processes) {
      if (p.topology != null) {
        close(p);
      }
    }
    return topologies;
  }

  private void close(ProcessState p) {
    TopologyBuilder t = p.topology;
    p.topology = null;
    if (topologies.size() < maxEntries && hosts.add(t.host)) {
      topologies.add(withClues(t.build()));
    }
  }

  private void closePasted() {
    TopologyBuilder t = pasted;
    pasted = null;
    if (topologies.size() < maxEntries) {
      topologies.add(withClues(t.build()));
    }
  }

  /** Node ids are {@code GPU/4000} up to 2.20 and {@code GPU/0-4000} (system id first) from 2.21. */
  private NcclTopology withClues(NcclTopology t) {
    for (NcclTopology.Node n : t.nodes()) {
      if (n.type().equals("GPU")) {
        if (n.id().indexOf('-') > 0) {
          clues.atLeast(21, "topology ids with a system id (" + n.name() + ")", t.lineNumber());
        } else {
          clues.atMost(20, "topology ids without a system id (" + n.name() + ")", t.lineNumber());
        }
        break;
      }
    }
    return t;
  }
}
