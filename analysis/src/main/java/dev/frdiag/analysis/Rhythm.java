package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A process group's own rhythm, from its records' times (DIAGNOSIS.md §3, "The job's rhythm"): how far apart its
 * collectives normally come on a member, and how far apart its members normally issue the same one. A wait or a
 * lag is judged against these, not against a fixed time: a group that all-reduces every 30 ms and one that syncs a
 * checkpoint every ten minutes hang at different scales. Computed once per group; not thread-safe.
 */
final class Rhythm {
  /** Waits shorter than this many of a group's usual intervals are part of its rhythm, not a hang. */
  static final long WAIT_RHYTHMS = 5;

  private final JobIndex index;
  private final Map<GroupKey, long[]> byGroup = new HashMap<>();

  Rhythm(JobIndex index) {
    this.index = index;
  }

  /** The median time between consecutive collectives of {@code g} on one member; 0 when the records cannot say. */
  long interval(GroupKey g) {
    return of(g)[0];
  }

  /**
   * The median spread of {@code g}'s members' issue times of one collective (latest minus earliest, over the
   * collectives every member still holds); 0 when the records cannot say.
   */
  long skew(GroupKey g) {
    return of(g)[1];
  }

  /**
   * How long {@code n}'s members that issued it had waited in it when their evidence was taken, the longest of
   * them; -1 when no such member's time of observation and issue are both known.
   */
  long waitSeen(StuckOp n, StuckOperations stuck) {
    long longest = -1;
    for (Map.Entry<Integer, MemberState> e : n.states.entrySet()) {
      if (e.getValue() != MemberState.ISSUED && e.getValue() != MemberState.WAITING) {
        continue;
      }
      RankIndex r = index.rank(e.getKey());
      long observed = r == null ? 0 : r.evidence.observedAtNs();
      long issued = stuck.recordsIn(n, e.getKey()).stream().filter(rec -> !Completion.ended(rec))
          .mapToLong(CollectiveRecord::getTimeCreatedNs).filter(t -> t > 0).min().orElse(0);
      if (observed > 0 && issued > 0) {
        longest = Math.max(longest, observed - issued);
      }
    }
    return longest;
  }

  private long[] of(GroupKey g) {
    return byGroup.computeIfAbsent(g, this::measure);
  }

  private long[] measure(GroupKey g) {
    List<Long> gaps = new ArrayList<>();
    Map<Long, long[]> issued = new HashMap<>();
    List<Integer> members = index.members.getOrDefault(g, List.of());
    int holding = 0;
    for (int m : members) {
      RankIndex.Track t = index.track(m, g);
      if (t == null || t.collectives.size() == 0) {
        continue;
      }
      holding++;
      long previous = 0;
      for (int i = 0; i < t.collectives.size(); i++) {
        CollectiveRecord r = t.collectives.at(i).get(0);
        long created = r.getTimeCreatedNs();
        if (created <= 0) {
          continue;
        }
        if (previous > 0 && created > previous) {
          gaps.add(created - previous);
        }
        previous = created;
        long[] range = issued.computeIfAbsent(t.collectives.seq(i), s -> new long[] {Long.MAX_VALUE, 0, 0});
        range[0] = Math.min(range[0], created);
        range[1] = Math.max(range[1], created);
        range[2]++;
      }
    }
    List<Long> spreads = new ArrayList<>();
    for (long[] range : issued.values()) {
      if (holding > 1 && range[2] == holding) {
        spreads.add(range[1] - range[0]);
      }
    }
    return new long[] {median(gaps), median(spreads)};
  }

  private static long median(List<Long> values) {
    return values.isEmpty() ? 0 : values.stream().sorted().toList().get(values.size() / 2);
  }
}
