package dev.frdiag.analysis;

import dev.frdiag.proto.RecordedGroups;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroup;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
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
  /** Rank → its indexed evidence, by number; null when ranks are numbered too sparsely for an array. */
  private final RankIndex[] dense;

  JobIndex(JobEvidence job) {
    this.job = job;
    TreeMap<Integer, RankIndex> byRank = new TreeMap<>();
    Map<GroupKey, ProcessGroup> byKey = new TreeMap<>();
    Map<GroupKey, List<Integer>> sortedMembers = new HashMap<>();
    // One key object per group, shared by every rank's index: a lookup that finds the very key it was given compares
    // no names (a million lookups at 16,384 ranks).
    Map<GroupKey, GroupKey> keys = new HashMap<>();
    // Ranks of a live job share one copy of each group: each copy is looked at once, and its key found by identity.
    Map<ProcessGroup, GroupKey> keyOf = new IdentityHashMap<>();
    Map<String, ProcessGroup> recorded = recordedGroups(job);
    for (RankEvidence e : job.ranks()) {
      for (ProcessGroup listed : e.groups()) {
        if (keyOf.containsKey(listed)) {
          continue;
        }
        // A group whose members came from records is each rank's partial view of one group: matched as the whole.
        ProcessGroup g = listed.getMembersFromRecords() ? recorded.get(listed.getName()) : listed;
        GroupKey key = keys.computeIfAbsent(GroupKey.of(g), k -> k);
        keyOf.put(listed, key);
        if (byKey.putIfAbsent(key, g) == null) {
          sortedMembers.put(key, GroupMembers.of(g));
        }
      }
    }
    // Each rank's records indexed on every core: the biggest share of an analysis, and independent per rank.
    for (RankIndex r : job.ranks().parallelStream().map(e -> new RankIndex(e, keyOf)).toList()) {
      byRank.put(r.rank(), r);
    }
    this.ranks = Collections.unmodifiableMap(byRank);
    this.groups = Collections.unmodifiableMap(byKey);
    this.members = Collections.unmodifiableMap(sortedMembers);
    int highest = byRank.isEmpty() ? -1 : byRank.lastKey();
    // By number where ranks are numbered densely, as a job's are; a sorted map's lookups otherwise (a dump folder
    // whose file names claim a rank in the billions must not size an array).
    if (highest < 2L * byRank.size() + 1024) {
      RankIndex[] byNumber = new RankIndex[highest + 1];
      byRank.forEach((rank, r) -> byNumber[rank] = r);
      dense = byNumber;
    } else {
      dense = null;
    }
  }

  /**
   * The groups some rank lists with members taken from its records, completed across the job (a live job's ranks
   * stream through agents that each see one node; a folder's dumps were completed when read, and stay as they are).
   */
  private static Map<String, ProcessGroup> recordedGroups(JobEvidence job) {
    Map<Integer, List<ProcessGroup>> views = new HashMap<>();
    for (RankEvidence e : job.ranks()) {
      if (e.groups().stream().anyMatch(ProcessGroup::getMembersFromRecords)) {
        views.put(e.rank(), e.groups());
      }
    }
    return views.isEmpty() ? Map.of() : RecordedGroups.complete(views, job.worldSize());
  }

  /** {@code rank}'s indexed evidence, or null when it sent nothing. */
  RankIndex rank(int rank) {
    if (dense == null) {
      return ranks.get(rank);
    }
    return rank >= 0 && rank < dense.length ? dense[rank] : null;
  }

  /** {@code rank}'s view of group {@code g}, or null when it holds nothing of it. */
  RankIndex.Track track(int rank, GroupKey g) {
    RankIndex r = rank(rank);
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
    for (CollectiveRecord rec : t.p2p.all()) {
      if (rec.getPeer() == owner && !Completion.ended(rec)) {
        return rec;
      }
    }
    return null;
  }

  /** Host of {@code rank}, "?" when unknown. */
  String host(int rank) {
    RankIndex r = rank(rank);
    return r == null ? "?" : r.evidence.host();
  }

  boolean isLost(int rank) {
    RankIndex r = rank(rank);
    return r != null && r.evidence.liveness() == Liveness.LOST;
  }
}
