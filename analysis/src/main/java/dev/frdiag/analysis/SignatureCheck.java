package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Program bugs: members of a stuck process group disagreeing on what one operation is (op, sizes, dtypes, a
 * send's peer), by the rules of {@link CollectiveMatch}. At most one mismatch per group, the earliest.
 */
final class SignatureCheck {
  /**
   * Members of one operation that issued it differently from their peers.
   *
   * @param group the process group
   * @param seq collective_seq, or p2p_seq when {@code p2p}
   * @param p2p true for send/recv
   * @param evidence the "signature_mismatch" fact; its ranks are the culprits
   */
  record Mismatch(GroupKey group, long seq, boolean p2p, Evidence evidence) {}

  private final JobIndex index;

  private SignatureCheck(JobIndex index) {
    this.index = index;
  }

  /** The first mismatch of each process group that has a stuck operation, in group order. */
  static List<Mismatch> check(JobIndex index, StuckOperations stuck) {
    Set<GroupKey> stuckGroups = new HashSet<>();
    stuck.all().forEach(op -> stuckGroups.add(op.group));
    SignatureCheck check = new SignatureCheck(index);
    List<Mismatch> found = new ArrayList<>();
    for (GroupKey g : index.groups.keySet()) {
      if (stuckGroups.contains(g)) {
        Mismatch m = check.firstMismatch(g);
        if (m != null) {
          found.add(m);
        }
      }
    }
    return found;
  }

  private Mismatch firstMismatch(GroupKey g) {
    int groupSize = (int) g.size();
    Map<Long, Map<Integer, List<CollectiveRecord>>> bySeq = new TreeMap<>();
    Map<Long, Map<Integer, List<CollectiveRecord>>> p2pBySeq = new TreeMap<>();
    for (int member : index.members.get(g)) {
      RankIndex.Track t = index.track(member, g);
      if (t == null) {
        continue;
      }
      t.collectives.forEach((seq, recs) -> {
        // The ring (or the daemon's window) drops one record at a time, oldest first, and a coalesced group's end
        // marker is recorded last: the oldest seq held may be a group's tail, down to the marker alone. A partial
        // group compared with a whole one would look like a program bug.
        if (seq == t.oldestHeld && (recs.size() > 1 || CollectiveMatch.isCoalescedEnd(recs.get(0)))) {
          return;
        }
        bySeq.computeIfAbsent(seq, x -> new TreeMap<>()).put(member, recs);
      });
      t.p2p.forEach((seq, recs) -> p2pBySeq.computeIfAbsent(seq, x -> new TreeMap<>()).put(member, recs));
    }
    Mismatch m = firstCollectiveMismatch(g, groupSize, bySeq);
    if (m == null && groupSize == 2) {
      m = firstP2pMismatch(g, p2pBySeq);
    }
    return m;
  }

  private Mismatch firstCollectiveMismatch(GroupKey g, int groupSize,
      Map<Long, Map<Integer, List<CollectiveRecord>>> bySeq) {
    // The members of a group issue the same few signatures again and again: each is checked once per group.
    Map<List<Object>, List<String>> checked = new HashMap<>();
    for (Map.Entry<Long, Map<Integer, List<CollectiveRecord>>> e : bySeq.entrySet()) {
      long seq = e.getKey();
      Map<Integer, List<CollectiveRecord>> byRank = e.getValue();
      // Problems inside one rank's own op (a gather whose output cannot hold group-size inputs, …).
      Map<Integer, List<String>> own = new TreeMap<>();
      Map<Integer, List<Object>> keys = new TreeMap<>();
      byRank.forEach((rank, recs) -> {
        List<Object> key = CollectiveMatch.key(recs);
        keys.put(rank, key);
        // An uneven op's key leaves its sizes out, and its own check looks at them: those are checked each time.
        List<String> problems = CollectiveMatch.hasUnevenOp(recs) ? CollectiveMatch.selfCheck(recs, groupSize)
            : checked.computeIfAbsent(key, k -> CollectiveMatch.selfCheck(recs, groupSize));
        if (!problems.isEmpty()) {
          own.put(rank, problems);
        }
      });
      if (!own.isEmpty()) {
        List<Integer> culprits = List.copyOf(own.keySet());
        return mismatch(g, seq, false, culprits, own.entrySet().stream()
            .map(x -> "rank " + x.getKey() + ": " + String.join("; ", x.getValue()))
            .collect(Collectors.joining("; ")) + " (" + g.name() + " seq " + seq + ")");
      }
      if (byRank.size() < 2) {
        continue;
      }
      if (!allEqual(keys.values())) {
        List<Integer> culprits = minority(g, seq, keys);
        List<Integer> others = keys.keySet().stream().filter(x -> !culprits.contains(x)).toList();
        String expected = others.isEmpty() ? "?" : CollectiveMatch.describe(byRank.get(others.get(0)));
        return mismatch(g, seq, false, culprits, culprits.stream()
            .map(c -> "rank " + c + " issued " + CollectiveMatch.describe(byRank.get(c)))
            .collect(Collectors.joining("; ")) + " where ranks " + Ranks.compact(others) + " issued " + expected
            + " (" + g.name() + " seq " + seq + ")");
      }
      // The totals balance only over every member's input and output; evidence from logs has no output counts.
      if (byRank.size() == groupSize && CollectiveMatch.isAllToAll(byRank.values().iterator().next())
          && byRank.values().stream().flatMap(List::stream).allMatch(r -> r.getOutputSizesCount() > 0)) {
        long in = byRank.values().stream().mapToLong(CollectiveMatch::inputNumel).sum();
        long out = byRank.values().stream().mapToLong(CollectiveMatch::outputNumel).sum();
        if (in != out) {
          // The totals say the split sizes disagree, not which rank is wrong.
          return mismatch(g, seq, false, List.copyOf(byRank.keySet()), "all_to_all totals do not balance: "
              + "total input numel " + in + " but total output numel " + out + " over ranks "
              + Ranks.compact(List.copyOf(byRank.keySet())) + " (" + g.name() + " seq " + seq + ")");
        }
      }
    }
    return null;
  }

  /** True when every key equals the first: no set is built for the usual case of a group that agrees. */
  private static boolean allEqual(Collection<List<Object>> keys) {
    List<Object> first = null;
    for (List<Object> k : keys) {
      if (first == null) {
        first = k;
      } else if (!first.equals(k)) {
        return false;
      }
    }
    return true;
  }

  private static Mismatch firstP2pMismatch(GroupKey g, Map<Long, Map<Integer, List<CollectiveRecord>>> bySeq) {
    for (Map.Entry<Long, Map<Integer, List<CollectiveRecord>>> e : bySeq.entrySet()) {
      if (e.getValue().size() != 2) {
        continue;
      }
      List<Integer> pair = List.copyOf(e.getValue().keySet());
      CollectiveRecord a = e.getValue().get(pair.get(0)).get(0);
      CollectiveRecord b = e.getValue().get(pair.get(1)).get(0);
      String problem = CollectiveMatch.p2pProblem(pair.get(0), a, pair.get(1), b);
      if (problem != null) {
        return mismatch(g, e.getKey(), true, pair, problem + " (" + g.name() + " p2p seq " + e.getKey() + ")");
      }
    }
    return null;
  }

  private static Mismatch mismatch(GroupKey g, long seq, boolean p2p, List<Integer> culprits, String detail) {
    return new Mismatch(g, seq, p2p, new Evidence(Evidence.Kind.SIGNATURE_MISMATCH, culprits, detail));
  }

  /**
   * The members whose op is the odd one out: the minority when there is a majority; with a tie (two-member
   * groups), the members whose op also differs from what they issued for the same op earlier in the group.
   */
  private List<Integer> minority(GroupKey g, long seq, Map<Integer, List<Object>> keys) {
    Map<List<Object>, List<Integer>> byKey = new HashMap<>();
    keys.forEach((rank, key) -> byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(rank));
    int max = byKey.values().stream().mapToInt(List::size).max().orElse(0);
    List<List<Integer>> majorities = byKey.values().stream().filter(l -> l.size() == max).toList();
    if (majorities.size() == 1) {
      return keys.keySet().stream().filter(r -> !majorities.get(0).contains(r)).sorted().toList();
    }
    List<Integer> changed = new ArrayList<>();
    for (int rank : keys.keySet()) {
      RankIndex.Track t = index.track(rank, g);
      String ops = opsOf(t.collectives.get(seq));
      Map.Entry<Long, List<CollectiveRecord>> prev = t.collectives.lowerEntry(seq);
      while (prev != null && !opsOf(prev.getValue()).equals(ops)) {
        prev = t.collectives.lowerEntry(prev.getKey());
      }
      if (prev != null && !CollectiveMatch.key(prev.getValue()).equals(keys.get(rank))) {
        changed.add(rank);
      }
    }
    return changed.isEmpty() || changed.size() == keys.size() ? keys.keySet().stream().sorted().toList()
        : changed;
  }

  /** The op names of one seq (several for a coalesced group), without sizes. */
  private static String opsOf(List<CollectiveRecord> recs) {
    return recs.stream().map(CollectiveRecord::getOp).collect(Collectors.joining("+"));
  }
}
