package dev.frdiag.readers.nccl;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One communicator, joined across ranks and processes by its {@code commId}.
 *
 * @param commId the {@code commId 0x…} hash printed on Init lines; for lines without one (≤2.20 or
 *     {@code ncclCommSplit}) {@code comm 0x…@host:pid}, which cannot be joined across processes
 * @param nranks the communicator's size
 * @param ranks the ranks seen, by rank
 */
public record NcclCommunicator(String commId, int nranks, SortedMap<Integer, NcclRank> ranks) {
  public NcclCommunicator {
    Objects.requireNonNull(commId, "commId");
    if (nranks < 1) {
      throw new IllegalArgumentException("nranks must be positive, got " + nranks);
    }
    ranks = Collections.unmodifiableSortedMap(new TreeMap<>(ranks));
  }

  /** The hosts the seen ranks run on, sorted. */
  public Set<String> hosts() {
    Set<String> hosts = new TreeSet<>();
    for (NcclRank r : ranks.values()) {
      hosts.add(r.host());
    }
    return hosts;
  }

  /** True when every rank of the communicator printed {@code Init COMPLETE} (or later). */
  boolean initComplete() {
    if (ranks.size() < nranks) {
      return false;
    }
    for (Map.Entry<Integer, NcclRank> e : ranks.entrySet()) {
      NcclRank.State s = e.getValue().state();
      if (s == NcclRank.State.SEEN || s == NcclRank.State.INIT_STARTED) {
        return false;
      }
    }
    return true;
  }
}
