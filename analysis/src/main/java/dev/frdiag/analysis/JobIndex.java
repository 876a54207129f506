package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One job's evidence indexed once for every phase of the analysis: ranks by number, process groups by identity.
 * Not modified after construction.
 */
final class JobIndex {
  final JobEvidence job;
  /** Rank → its indexed evidence; ranks that sent nothing are absent. */
  final Map<Integer, RankIndex> ranks;
  final Map<GroupKey, ProcessGroup> groups;
  /** Sorted members of each group, computed once per group (not per rank). */
  final Map<GroupKey, List<Integer>> members;

  JobIndex(JobEvidence job) {
    this.job = job;
    Map<Integer, RankIndex> byRank = new TreeMap<>();
    Map<GroupKey, ProcessGroup> byKey = new TreeMap<>();
    Map<GroupKey, List<Integer>> sortedMembers = new HashMap<>();
    // Each rank's records indexed on every core: the biggest share of an analysis, and independent per rank.
    for (RankIndex r : job.ranks().parallelStream().map(RankIndex::new).toList()) {
      byRank.put(r.rank(), r);
    }
    for (RankEvidence e : job.ranks()) {
      for (ProcessGroup g : e.groups()) {
        GroupKey key = GroupKey.of(g);
        if (byKey.putIfAbsent(key, g) == null) {
          sortedMembers.put(key, g.getRanksList().stream().sorted().toList());
        }
      }
    }
    this.ranks = Collections.unmodifiableMap(byRank);
    this.groups = Collections.unmodifiableMap(byKey);
    this.members = Collections.unmodifiableMap(sortedMembers);
  }

  /** {@code rank}'s view of group {@code g}, or null when it holds nothing of it. */
  RankIndex.Track track(int rank, GroupKey g) {
    RankIndex r = ranks.get(rank);
    return r == null ? null : r.tracks.get(g);
  }

  /** The records {@code rank} holds for one seq of {@code g}; several for a coalesced group. */
  List<CollectiveRecord> recordsOf(int rank, GroupKey g, long seq, boolean p2p) {
    RankIndex.Track t = track(rank, g);
    if (t == null) {
      return List.of();
    }
    List<CollectiveRecord> recs = (p2p ? t.p2p : t.collectives).get(seq);
    return recs == null ? List.of() : recs;
  }

  /** The peer's outstanding send/recv with {@code owner} in {@code g}, or null. */
  CollectiveRecord counterpart(int rank, GroupKey g, int owner) {
    RankIndex.Track t = track(rank, g);
    if (t == null) {
      return null;
    }
    for (List<CollectiveRecord> recs : t.p2p.values()) {
      for (CollectiveRecord rec : recs) {
        if (rec.getPeer() == owner && rec.getState() != CollectiveState.COMPLETED) {
          return rec;
        }
      }
    }
    return null;
  }

  /** Host of {@code rank}, "?" when unknown. */
  String host(int rank) {
    RankIndex r = ranks.get(rank);
    return r == null ? "?" : r.evidence.host();
  }

  boolean isLost(int rank) {
    RankIndex r = ranks.get(rank);
    return r != null && r.evidence.liveness() == Liveness.LOST;
  }
}
