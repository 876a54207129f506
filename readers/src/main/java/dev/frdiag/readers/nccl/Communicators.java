package dev.frdiag.readers.nccl;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The communicators of one parse, rank by rank, from Init/Destroy lines and from the connection lines that name a
 * rank; and the ranks seen before any Init line placed them in a communicator ("loose" ranks).
 */
final class Communicators {
  private final int maxEntries;
  private final Map<String, Comm> comms = new LinkedHashMap<>();
  private final TreeMap<Integer, NcclRank> looseRanks = new TreeMap<>();
  private long dropped;

  Communicators(int maxEntries) {
    this.maxEntries = maxEntries;
  }

  /**
   * Records what an Init, Destroy or Abort line says of one rank; a later state replaces an earlier one, never the
   * reverse. {@code cudaDev} and {@code nvmlDev} are the numbers as printed, {@code nvmlDev} null when the line
   * does not print it; they are read only when the line changes the rank. False when no more communicators fit.
   */
  boolean rankLine(String commId, int nranks, int rank, String host, int pid, String cudaDev, String nvmlDev,
      String busId, NcclRank.State state, String evidence) {
    Comm cb = comms.get(commId);
    if (cb == null) {
      if (comms.size() >= maxEntries) {
        dropped++;
        return false;
      }
      cb = new Comm(nranks);
      comms.put(commId, cb);
    }
    NcclRank old = cb.ranks.get(rank);
    if (old == null || old.state().ordinal() <= state.ordinal()) {
      int nvml = nvmlDev != null ? Integer.parseInt(nvmlDev) : old != null ? old.nvmlDev() : -1;
      cb.ranks.put(rank, new NcclRank(rank, host, pid, Integer.parseInt(cudaDev), nvml, busId, state, evidence));
    }
    return true;
  }

  /**
   * Records that a process showed {@code rank}: in the communicator it last printed an Init line for, or loose when
   * it printed none. Never overrides what an Init line said.
   */
  void seen(String currentCommId, int rank, String host, int pid, int nvmlDev, String evidence) {
    if (!currentCommId.isEmpty()) {
      Comm cb = comms.get(currentCommId);
      if (cb != null && rank < cb.nranks && !cb.ranks.containsKey(rank)) {
        cb.ranks.put(rank, new NcclRank(rank, host, pid, -1, nvmlDev, "", NcclRank.State.SEEN, evidence));
      }
    } else if (!looseRanks.containsKey(rank) && looseRanks.size() < maxEntries) {
      looseRanks.put(rank, new NcclRank(rank, host, pid, -1, nvmlDev, "", NcclRank.State.SEEN, evidence));
    }
  }

  List<NcclCommunicator> communicators() {
    List<NcclCommunicator> all = new ArrayList<>();
    for (Map.Entry<String, Comm> e : comms.entrySet()) {
      all.add(new NcclCommunicator(e.getKey(), e.getValue().nranks, e.getValue().ranks));
    }
    return all;
  }

  /**
   * The loose ranks, completed from launcher tags when the log has no communicator: a tag names a rank whose NCCL
   * lines may have fallen outside an excerpt.
   */
  SortedMap<Integer, NcclRank> looseRanks(Collection<ProcessState> processes) {
    if (comms.isEmpty()) {
      Set<String> placed = new HashSet<>();
      for (NcclRank r : looseRanks.values()) {
        placed.add(r.host() + ":" + r.pid());
      }
      for (ProcessState p : processes) {
        if (p.launcherRank >= 0 && !looseRanks.containsKey(p.launcherRank) && !placed.contains(p.host + ":" + p.pid)
            && looseRanks.size() < maxEntries) {
          looseRanks.put(p.launcherRank, new NcclRank(p.launcherRank, p.host, p.pid, -1, -1, "",
              NcclRank.State.SEEN, "launcher tag [" + p.launcherRank + "]"));
        }
      }
    }
    return looseRanks;
  }

  /** Init lines not recorded because there were too many communicators. */
  long dropped() {
    return dropped;
  }

  /** One communicator being assembled. */
  private static final class Comm {
    final int nranks;
    final TreeMap<Integer, NcclRank> ranks = new TreeMap<>();

    Comm(int nranks) {
      this.nranks = nranks;
    }
  }
}
