package dev.frdiag.daemon.registry;

import dev.frdiag.analysis.Liveness;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The watchdog's stall rule (DIAGNOSIS.md §3): a process group with outstanding work whose every live member has gone
 * the stall timeout without advancing its completed seq. Pure over the ranks' state; the caller holds the job's lock.
 */
final class StallCheck {
  private StallCheck() {}

  /**
   * How long the quietest group with outstanding work has gone without progress (the least quiet of its live
   * members); -1 when no group has outstanding work.
   */
  static long longestQuietNanos(Collection<RankState> ranks, long nowNanos) {
    long longest = -1;
    for (long[] agg : perGroup(ranks, nowNanos).values()) {
      if (agg[0] == 1) {
        longest = Math.max(longest, agg[1]);
      }
    }
    return longest;
  }

  /**
   * The groups with outstanding work whose every live member has gone {@code timeoutNanos} without progress: each
   * as the job's copy of the group the ranks announced (or its name, for one never announced).
   */
  static Set<Object> stalledGroups(Collection<RankState> ranks, long nowNanos, long timeoutNanos) {
    Set<Object> stalled = new HashSet<>();
    perGroup(ranks, nowNanos).forEach((group, agg) -> {
      if (agg[0] == 1 && agg[1] >= timeoutNanos) {
        stalled.add(group);
      }
    });
    return stalled;
  }

  /**
   * Whether some live member of {@code group} (as {@link #stalledGroups} names it) advanced it, by the daemon's
   * clock, after {@code sinceNanos}.
   */
  static boolean advancedSince(Collection<RankState> ranks, Object group, long sinceNanos) {
    String name = group instanceof ProcessGroup g ? g.getName() : (String) group;
    for (RankState r : ranks) {
      if (r.liveness() == Liveness.ALIVE && r.advancedSince(name, sinceNanos) && r.groupKey(name).equals(group)) {
        return true;
      }
    }
    return false;
  }

  /** Per group: whether it has outstanding work (1 or 0), and how long its least quiet live member has been quiet. */
  private static Map<Object, long[]> perGroup(Collection<RankState> ranks, long nowNanos) {
    // Keyed by the job's one copy of each announced group (its hash is computed once), never by a string of its
    // members: that was the world group's 16,384 members printed for each of its 16,384 ranks on every pass, under
    // the lock that every heartbeat of the job waits for.
    Map<Object, long[]> groups = new HashMap<>();
    for (RankState r : ranks) {
      if (r.liveness() != Liveness.ALIVE) {
        continue;
      }
      for (ProcessGroupProgress p : r.progress()) {
        long[] agg = groups.computeIfAbsent(r.groupKey(p.getProcessGroup()), k -> new long[] {0, Long.MAX_VALUE});
        if (outstanding(p)) {
          agg[0] = 1;
        }
        agg[1] = Math.min(agg[1], r.quietNanos(p.getProcessGroup(), nowNanos));
      }
    }
    return groups;
  }

  /** Whether the rank has issued work on the group that it has not completed. */
  static boolean outstanding(ProcessGroupProgress p) {
    return p.getLastEnqueuedSeq() > p.getLastCompletedSeq() || p.getLastEnqueuedP2PSeq() > p.getLastCompletedP2PSeq();
  }
}
