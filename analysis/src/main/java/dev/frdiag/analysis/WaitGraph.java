package dev.frdiag.analysis;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Who waits for whom across the job's stuck operations (DIAGNOSIS.md §4, "Who waits for whom"): each rank is in the
 * operation it issued and waits in, and waits for every member of it that has not issued it. Two ranks that wait
 * for each other, each in an operation the other has not issued, cannot both be right about the program's order of
 * collectives: they issued collectives in different orders or counts. Built once the members are classified; not
 * thread-safe.
 */
final class WaitGraph {
  /** Rank → the operation it waits in. */
  private final Map<Integer, StuckOp> in = new TreeMap<>();
  /** Rank → the ranks it waits for. */
  private final Map<Integer, Set<Integer>> waitsFor = new TreeMap<>();

  private WaitGraph() {}

  /** The graph of {@code stuck}'s classified operations. */
  static WaitGraph of(StuckOperations stuck) {
    WaitGraph graph = new WaitGraph();
    for (StuckOp n : stuck.all()) {
      List<Integer> inside = new ArrayList<>(n.in(MemberState.WAITING));
      inside.addAll(n.in(MemberState.ISSUED));
      for (int rank : inside) {
        graph.in.putIfAbsent(rank, n);
        graph.waitsFor.computeIfAbsent(rank, r -> new TreeSet<>()).addAll(n.in(MemberState.NOT_ISSUED));
      }
    }
    return graph;
  }

  /** The operation {@code rank} waits in; null when it waits in none. */
  StuckOp in(int rank) {
    return in.get(rank);
  }

  /**
   * The pairs of ranks that wait for each other, each in an operation the other has not issued, the lower rank
   * first.
   */
  List<int[]> mutualWaits() {
    List<int[]> pairs = new ArrayList<>();
    waitsFor.forEach((a, theirs) -> {
      for (int b : theirs) {
        if (a < b && waitsFor.getOrDefault(b, Set.of()).contains(a)) {
          pairs.add(new int[] {a, b});
        }
      }
    });
    return pairs;
  }

  /**
   * A program-order divergence (DIAGNOSIS.md §4, "Who waits for whom").
   *
   * @param culprits the fewest ranks that take part in every mutual wait; both ranks of a single pair
   * @param sure whether more than one mutual wait names culprits fewer than half the ranks involved: with one pair,
   *     either rank may be the one that diverged
   * @param primary the operation the first culprit waits in
   * @param evidence one line per culprit (its operation, who has not issued it, what its partners wait in), then
   *     what the mutual waits mean
   */
  record Divergence(List<Integer> culprits, boolean sure, StuckOp primary, List<Evidence> evidence) {}

  /** The divergence the mutual waits show; null when no two ranks wait for each other. */
  Divergence divergence() {
    List<int[]> pairs = mutualWaits();
    if (pairs.isEmpty()) {
      return null;
    }
    Set<Integer> involved = new TreeSet<>();
    pairs.forEach(p -> {
      involved.add(p[0]);
      involved.add(p[1]);
    });
    List<Integer> culprits = pairs.size() == 1 ? List.copyOf(involved) : cover(pairs);
    boolean sure = pairs.size() > 1 && 2 * culprits.size() < involved.size();
    List<Evidence> evidence = new ArrayList<>();
    for (int c : culprits) {
      StuckOp mine = in(c);
      List<Integer> partners = new ArrayList<>();
      Set<String> theirOps = new TreeSet<>();
      for (int[] p : pairs) {
        int other = p[0] == c ? p[1] : p[1] == c ? p[0] : -1;
        if (other >= 0) {
          partners.add(other);
          theirOps.add(in(other).label());
        }
      }
      List<Integer> notIssued = mine.in(MemberState.NOT_ISSUED);
      boolean alone = notIssued.size() == mine.states.size() - 1;
      evidence.add(new Evidence(Evidence.Kind.SEQUENCE_MISMATCH, List.of(c), "Rank " + c + " issued "
          + mine.label() + (alone ? ", which no other member of its group has issued" : ", which "
              + Wording.who(notIssued) + " have not issued") + ", while "
          + Wording.who(partners.stream().sorted().toList()) + " wait" + (partners.size() == 1 ? "s" : "")
          + " for it in " + String.join(", ", theirOps) + ", which it has not issued"));
    }
    evidence.add(new Evidence(Evidence.Kind.SEQUENCE_MISMATCH, List.copyOf(involved), "These ranks wait for each "
        + "other, each in a collective the other has not issued: they issued collectives in different orders or "
        + "counts (a collective under a rank-dependent branch, such as `if rank == 0: dist.all_reduce(...)`, or the "
        + "same collectives in another order)" + (sure ? "" : "; which of them diverged, the evidence cannot say")));
    return new Divergence(culprits, sure, in(culprits.get(0)), evidence);
  }

  /**
   * The fewest ranks that take part in every mutual wait, the ranks in most of them first: where a program's order
   * diverged on some ranks, those ranks each wait for many peers that each wait for them.
   */
  static List<Integer> cover(List<int[]> pairs) {
    List<int[]> left = new ArrayList<>(pairs);
    List<Integer> cover = new ArrayList<>();
    while (!left.isEmpty()) {
      Map<Integer, Integer> count = new HashMap<>();
      for (int[] p : left) {
        count.merge(p[0], 1, Integer::sum);
        count.merge(p[1], 1, Integer::sum);
      }
      int most = count.entrySet().stream().max(Map.Entry.<Integer, Integer>comparingByValue()
          .thenComparing(Map.Entry.comparingByKey(Comparator.reverseOrder()))).orElseThrow().getKey();
      cover.add(most);
      left.removeIf(p -> p[0] == most || p[1] == most);
    }
    return cover.stream().sorted().toList();
  }
}
