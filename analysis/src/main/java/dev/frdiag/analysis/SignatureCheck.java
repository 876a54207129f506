package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
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

  /** Distinct signatures of one seq looked up before a member's own is checked by itself. */
  private static final int MAX_SIGNATURES_KEPT = 4;
  /** Signatures of a group that passed their own checks, kept to be found again rather than checked again. */
  private static final int MAX_PASSED_KEPT = 16;

  private final JobIndex index;

  private SignatureCheck(JobIndex index) {
    this.index = index;
  }

  /** The first mismatch of each process group that has a stuck operation, in group order. */
  static List<Mismatch> check(JobIndex index, StuckOperations stuck) {
    Set<GroupKey> stuckGroups = new HashSet<>();
    stuck.all().forEach(op -> stuckGroups.add(op.group));
    SignatureCheck check = new SignatureCheck(index);
    // Groups are checked apart from each other (on every core: a hung job's every group may be stuck), and the
    // mismatches kept in group order.
    return index.groups.keySet().stream().filter(stuckGroups::contains).toList().parallelStream()
        .map(check::firstMismatch).filter(Objects::nonNull).toList();
  }

  private Mismatch firstMismatch(GroupKey g) {
    int groupSize = (int) g.size();
    List<Integer> members = index.members.get(g);
    // Per seq, each member's records in member order (members are sorted, so appending keeps rank order).
    SeqTable bySeq = SeqTable.spanning(members.stream().map(m -> index.track(m, g)).toList());
    for (int member : members) {
      RankIndex.Track t = index.track(member, g);
      if (t == null) {
        continue;
      }
      for (int i = 0; i < t.collectives.size(); i++) {
        hold(bySeq, member, t, i);
      }
    }
    Mismatch m = firstCollectiveMismatch(g, groupSize, bySeq);
    if (m == null && groupSize == 2) {
      // Sends and recvs are compared in two-member groups only, where a p2p seq names one pair of ops.
      Map<Long, Map<Integer, List<CollectiveRecord>>> p2pBySeq = new TreeMap<>();
      for (int member : members) {
        RankIndex.Track t = index.track(member, g);
        for (int i = 0; t != null && i < t.p2p.size(); i++) {
          p2pBySeq.computeIfAbsent(t.p2p.seq(i), x -> new TreeMap<>()).put(member, t.p2p.at(i));
        }
      }
      m = firstP2pMismatch(g, p2pBySeq);
    }
    return m;
  }

  /**
   * Puts {@code member}'s {@code i}-th seq of {@code t} in {@code bySeq}. A method of its own, called per seq: the
   * loop around it runs once per member and group, too few times to be compiled before it is done.
   */
  private static void hold(SeqTable bySeq, int member, RankIndex.Track t, int i) {
    long seq = t.collectives.seq(i);
    List<CollectiveRecord> recs = t.collectives.at(i);
    // The ring (or the daemon's window) drops one record at a time, oldest first, and a coalesced group's end
    // marker is recorded last: the oldest seq held may be a group's tail, down to the marker alone. A partial
    // group compared with a whole one would look like a program bug.
    if (seq == t.oldestHeld && (recs.size() > 1 || CollectiveMatch.isCoalescedEnd(recs.get(0)))) {
      return;
    }
    bySeq.at(seq).add(member, recs);
  }

  /**
   * The members' records of a group by collective seq, in seq order. Members hold the same few thousand seqs of a
   * group (their rings), so the seqs index an array; only seqs spread far apart (evidence of other shapes) fall back
   * to a sorted map. A 512-rank ring's world group is a million (member, seq) pairs.
   */
  private static final class SeqTable {
    /** Seqs spread over more than this many slots per seq held go to a sorted map. */
    private static final int DENSITY = 4;

    private final long lowest;
    private final SeqRecords[] dense;
    private final TreeMap<Long, SeqRecords> sparse;

    private SeqTable(long lowest, SeqRecords[] dense, TreeMap<Long, SeqRecords> sparse) {
      this.lowest = lowest;
      this.dense = dense;
      this.sparse = sparse;
    }

    /** A table for the seqs {@code tracks} hold (null tracks hold none). */
    static SeqTable spanning(List<RankIndex.Track> tracks) {
      long lowest = Long.MAX_VALUE;
      long highest = Long.MIN_VALUE;
      long held = 0;
      for (RankIndex.Track t : tracks) {
        if (t != null && t.collectives.size() > 0) {
          lowest = Math.min(lowest, t.collectives.seq(0));
          highest = Math.max(highest, t.collectives.seq(t.collectives.size() - 1));
          held += t.collectives.size();
        }
      }
      if (held == 0) {
        return new SeqTable(0, new SeqRecords[0], null);
      }
      long span = highest - lowest + 1;
      if (span > 0 && span <= DENSITY * held + 64) {
        return new SeqTable(lowest, new SeqRecords[(int) span], null);
      }
      return new SeqTable(0, null, new TreeMap<>());
    }

    /** The records of {@code seq}, made empty on first use. */
    SeqRecords at(long seq) {
      if (dense == null) {
        return sparse.computeIfAbsent(seq, x -> new SeqRecords(seq));
      }
      int i = (int) (seq - lowest);
      SeqRecords r = dense[i];
      if (r == null) {
        r = new SeqRecords(seq);
        dense[i] = r;
      }
      return r;
    }

    /** Every seq's records, in seq order. */
    List<SeqRecords> inOrder() {
      if (dense == null) {
        return List.copyOf(sparse.values());
      }
      List<SeqRecords> out = new ArrayList<>(dense.length);
      for (SeqRecords r : dense) {
        if (r != null) {
          out.add(r);
        }
      }
      return out;
    }
  }

  /** The members' records of one seq, in rank order. */
  private static final class SeqRecords {
    final long seq;
    // Ranks unboxed: a world group's every member is added for every seq it holds.
    int[] ranks = new int[8];
    final List<List<CollectiveRecord>> records = new ArrayList<>();

    SeqRecords(long seq) {
      this.seq = seq;
    }

    void add(int rank, List<CollectiveRecord> recs) {
      int n = records.size();
      if (n == ranks.length) {
        ranks = Arrays.copyOf(ranks, n * 2);
      }
      ranks[n] = rank;
      records.add(recs);
    }

    int size() {
      return records.size();
    }

    List<Integer> rankList() {
      return Arrays.stream(ranks, 0, size()).boxed().toList();
    }

    Map<Integer, List<CollectiveRecord>> byRank() {
      Map<Integer, List<CollectiveRecord>> out = new TreeMap<>();
      for (int i = 0; i < size(); i++) {
        out.put(ranks[i], records.get(i));
      }
      return out;
    }
  }

  private Mismatch firstCollectiveMismatch(GroupKey g, int groupSize, SeqTable bySeq) {
    List<List<CollectiveRecord>> passed = new ArrayList<>();
    for (SeqRecords members : bySeq.inOrder()) {
      if (agrees(members, groupSize, passed)) {
        continue;
      }
      long seq = members.seq;
      // Members of a group issue the same signature for one seq: each distinct one (sizes included, so that the
      // own-op check, which reads sizes, gives every member sharing it the same answer) is checked once. Records
      // that share their fields (the daemon's windows, a dump's templates) compare by reference.
      // An uneven op (all_to_all) may have as many signatures as members: past a few, each is checked on its own
      // rather than searched for among the others.
      List<List<CollectiveRecord>> distinct = new ArrayList<>(1);
      List<List<String>> problemsOf = new ArrayList<>(1);
      boolean varied = false;
      // Problems inside one rank's own op (a gather whose output cannot hold group-size inputs, …).
      Map<Integer, List<String>> own = new TreeMap<>();
      for (int i = 0; i < members.size(); i++) {
        List<CollectiveRecord> recs = members.records.get(i);
        int d = 0;
        while (d < distinct.size() && !CollectiveMatch.sameSignature(distinct.get(d), recs)) {
          d++;
        }
        List<String> problems;
        if (d < distinct.size()) {
          problems = problemsOf.get(d);
        } else {
          problems = CollectiveMatch.selfCheck(recs, groupSize);
          varied |= !distinct.isEmpty();
          if (distinct.size() < MAX_SIGNATURES_KEPT) {
            distinct.add(recs);
            problemsOf.add(problems);
          }
        }
        if (!problems.isEmpty()) {
          own.put(members.ranks[i], problems);
        }
      }
      if (!own.isEmpty()) {
        List<Integer> culprits = List.copyOf(own.keySet());
        return mismatch(g, seq, false, culprits, own.entrySet().stream()
            .map(x -> "rank " + x.getKey() + ": " + String.join("; ", x.getValue()))
            .collect(Collectors.joining("; ")) + " (" + g.name() + " seq " + seq + ")");
      }
      if (members.size() < 2) {
        continue;
      }
      // Signatures that differ may still match: an uneven op's members may pass different sizes.
      Map<Integer, List<CollectiveRecord>> byRank = varied ? members.byRank() : null;
      Map<Integer, List<Object>> keys = new TreeMap<>();
      if (byRank != null) {
        byRank.forEach((rank, recs) -> keys.put(rank, CollectiveMatch.key(recs)));
      }
      if (byRank != null && !allEqual(keys.values())) {
        List<Integer> culprits = minority(g, seq, keys);
        List<Integer> others = keys.keySet().stream().filter(x -> !culprits.contains(x)).toList();
        String expected = others.isEmpty() ? "?" : CollectiveMatch.describe(byRank.get(others.get(0)));
        return mismatch(g, seq, false, culprits, culprits.stream()
            .map(c -> "rank " + c + " issued " + CollectiveMatch.describe(byRank.get(c)))
            .collect(Collectors.joining("; ")) + " where ranks " + Ranks.compact(others) + " issued " + expected
            + " (" + g.name() + " seq " + seq + ")");
      }
      // The totals balance only over every member's input and output; evidence from logs has no output counts.
      List<List<CollectiveRecord>> all = members.records;
      if (all.size() == groupSize && CollectiveMatch.isAllToAll(all.get(0)) && allOutputsKnown(all)) {
        // Members that share one signature balance exactly when that signature does.
        List<List<CollectiveRecord>> counted = varied ? all : List.of(all.get(0));
        long in = 0;
        long out = 0;
        for (List<CollectiveRecord> recs : counted) {
          in += CollectiveMatch.inputNumel(recs);
          out += CollectiveMatch.outputNumel(recs);
        }
        if (in != out) {
          long scale = all.size() / counted.size();
          List<Integer> ranks = members.rankList();
          // The totals say the split sizes disagree, not which rank is wrong.
          return mismatch(g, seq, false, ranks, "all_to_all totals do not balance: "
              + "total input numel " + in * scale + " but total output numel " + out * scale + " over ranks "
              + Ranks.compact(ranks) + " (" + g.name() + " seq " + seq + ")");
        }
      }
    }
    return null;
  }

  /**
   * Whether one seq has nothing to report, found without the general comparison: every member issued the first
   * member's signature, that signature passes its own checks (looked up among those that passed already, as a group
   * issues a few signatures thousands of times) and, for an all_to_all of the whole group, its totals balance. The
   * general comparison gives the same answer for such a seq; it runs for every other.
   */
  private static boolean agrees(SeqRecords members, int groupSize, List<List<CollectiveRecord>> passed) {
    List<CollectiveRecord> first = members.records.get(0);
    for (int i = 1; i < members.size(); i++) {
      if (!CollectiveMatch.sameSignature(first, members.records.get(i))) {
        return false;
      }
    }
    boolean checked = false;
    for (int i = 0; i < passed.size() && !checked; i++) {
      checked = CollectiveMatch.sameSignature(passed.get(i), first);
    }
    if (!checked) {
      if (!CollectiveMatch.selfCheck(first, groupSize).isEmpty()) {
        return false;
      }
      if (passed.size() < MAX_PASSED_KEPT) {
        passed.add(first);
      }
    }
    if (members.size() == groupSize && CollectiveMatch.isAllToAll(first) && allOutputsKnown(List.of(first))) {
      return CollectiveMatch.inputNumel(first) == CollectiveMatch.outputNumel(first);
    }
    return true;
  }

  private static boolean allOutputsKnown(List<List<CollectiveRecord>> all) {
    for (List<CollectiveRecord> recs : all) {
      for (CollectiveRecord r : recs) {
        if (r.getOutputSizesCount() == 0) {
          return false;
        }
      }
    }
    return true;
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
   * groups), the members whose op also differs from what they issued for the same op earlier in the group; failing
   * that, the members whose op the group never issued before, where the others' op is one it did (a rank that
   * issues all_gather where its group had issued only all_reduce at every earlier step departs from the
   * program both ran until then).
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
    List<Integer> novel = new ArrayList<>();
    for (int rank : keys.keySet()) {
      RankIndex.Track t = index.track(rank, g);
      String ops = opsOf(t.collectives.get(seq));
      int prev = t.collectives.indexBelow(seq);
      boolean history = prev >= 0;
      while (prev >= 0 && !opsOf(t.collectives.at(prev)).equals(ops)) {
        prev--;
      }
      if (prev >= 0 && !CollectiveMatch.key(t.collectives.at(prev)).equals(keys.get(rank))) {
        changed.add(rank);
      } else if (history && prev < 0) {
        novel.add(rank);
      }
    }
    if (changed.isEmpty() && !novel.isEmpty() && novel.size() < keys.size()) {
      return novel.stream().sorted().toList();
    }
    return changed.isEmpty() || changed.size() == keys.size() ? keys.keySet().stream().sorted().toList()
        : changed;
  }

  /** The op names of one seq (several for a coalesced group), without sizes. */
  private static String opsOf(List<CollectiveRecord> recs) {
    return recs.stream().map(CollectiveRecord::getOp).collect(Collectors.joining("+"));
  }
}
