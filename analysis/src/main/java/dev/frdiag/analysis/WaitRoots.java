package dev.frdiag.analysis;

import static dev.frdiag.analysis.StragglerAnalyzer.MIN_COLLECTIVES;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Who holds the others up at a window's collectives: each rank's lateness, the root of each significant wait (the
 * last arriver, or whoever held it up upstream), and the ranks that stand apart as the roots of most of them. The
 * straggler analysis's judgement; what it says of it is {@link StragglerAnalyzer}'s.
 */
final class WaitRoots {
  /** How many times as many waits as the next rank the last rank named must cause. */
  static final int DOMINANCE = 3;
  /** The share of the window's significant waits a straggler must be the root of. */
  static final double MIN_SHARE = 0.3;
  /**
   * The share of its own collectives a straggler must hold the others up at: lateness at a few collectives of
   * hundreds is a healthy job's jitter, however lopsided (a healthy real gloo job, live on a loaded machine: one rank
   * the root of 13 of 22 significant waits, at 13 of its 495 collectives), while a straggler holds them up at most
   * (the slowed real job's rank 2: 357 of 371).
   */
  static final double MIN_OWN_SHARE = 0.1;
  /**
   * How unlikely it must be that a rank is the root of so many significant waits by chance (each wait falling on
   * any rank alike): a healthy job's occasional spikes spread over its ranks.
   */
  static final double CHANCE = 1e-3;
  /** A rank's recent collectives looked back on when its lateness may be a wait passed on. */
  static final int HISTORY = 32;

  private WaitRoots() {}

  /** Each rank's lateness, waits and times last over {@code arrivals}, by rank. */
  static Map<Integer, Stats> stats(List<Arrivals> arrivals) {
    Map<Integer, Stats> stats = new TreeMap<>();
    for (Arrivals a : arrivals) {
      long latest = a.latest();
      int last = a.lastRank();
      for (int i = 0; i < a.ranks().length; i++) {
        Stats s = stats.computeIfAbsent(a.ranks()[i], Stats::new);
        s.late.add(a.lateness(i, a.arrival()));
        s.waited += latest - a.arrival()[i];
        s.times.add(a.arrival()[i]);
        if (a.ranks()[i] == last) {
          s.timesLast++;
        }
      }
    }
    return stats;
  }

  /**
   * Finds each significant wait's root: a collective whose last arriver came {@code threshold} or more after the
   * median of the others. A last arriver that had itself waited, in the collectives it reached during the stretch
   * just before (twice its lateness here), at least half as long as it came late here only passes a wait on: it was
   * held up upstream (its tensor-parallel peer slept, so it reached its data-parallel group late), and the root is
   * that of the collective where it waited longest. Fills each rank's caused count, leads and side figures.
   *
   * @return how many collectives had a significant wait
   */
  static int attribute(List<Arrivals> arrivals, Map<Integer, Stats> stats, long threshold) {
    int[] root = new int[arrivals.size()];
    Map<Integer, ArrayDeque<long[]>> history = new HashMap<>();
    int significant = 0;
    for (int c = 0; c < arrivals.size(); c++) {
      Arrivals a = arrivals.get(c);
      root[c] = -1;
      int lastIdx = 0;
      for (int i = 1; i < a.ranks().length; i++) {
        if (a.arrival()[i] > a.arrival()[lastIdx]) {
          lastIdx = i;
        }
      }
      int last = a.ranks()[lastIdx];
      long lead = a.lateness(lastIdx, a.arrival());
      if (lead >= threshold) {
        significant++;
        long since = a.arrival()[lastIdx] - 2 * lead;
        long waited = 0;
        long[] longest = null;
        for (long[] h : history.getOrDefault(last, new ArrayDeque<>())) {
          if (h[1] >= since) {
            waited += h[2];
            if (longest == null || h[2] > longest[2]) {
              longest = h;
            }
          }
        }
        if (longest != null && waited >= lead / 2) {
          int upstream = (int) longest[0];
          root[c] = root[upstream] >= 0 ? root[upstream] : arrivals.get(upstream).lastRank();
          stats.get(last).passedOn++;
        } else {
          root[c] = last;
          Stats s = stats.get(last);
          s.leads.add(lead);
          if (a.issued() != null) {
            s.rootIssueLate.add(a.lateness(lastIdx, a.issued()));
          }
          if (a.start() != null) {
            s.rootStartLate.add(a.lateness(lastIdx, a.start()));
          }
        }
        Stats r = stats.get(root[c]);
        if (r != null) {
          r.caused++;
          long latest = a.latest();
          for (long t : a.arrival()) {
            r.causedWaitNs += latest - t;
          }
        }
      }
      long latest = a.latest();
      for (int i = 0; i < a.ranks().length; i++) {
        ArrayDeque<long[]> h = history.computeIfAbsent(a.ranks()[i], k -> new ArrayDeque<>());
        h.addLast(new long[] {c, a.arrival()[i], latest - a.arrival()[i]});
        if (h.size() > HISTORY) {
          h.removeFirst();
        }
      }
    }
    return significant;
  }

  /**
   * The stragglers: the ranks that cause the most significant waits, when they stand apart from the rest. By
   * waits caused, most first: the top k ranks are named for the smallest k at which the k-th caused
   * {@link #DOMINANCE} times as many as the next (at least one), each of them the root of at least
   * {@link StragglerAnalyzer#MIN_COLLECTIVES}, of {@link #MIN_SHARE} of them, of waits at {@link #MIN_OWN_SHARE} of its own
   * collectives, and of more than chance would give ({@link #CHANCE}). A healthy job's waits fall on every rank, some more than others (a rank its host or the
   * agent's polls slow a little): no such gap.
   */
  static List<Integer> culprits(Map<Integer, Stats> stats, int significant) {
    List<Stats> byCaused = new ArrayList<>(stats.values());
    byCaused.sort(Comparator.comparingInt((Stats s) -> s.caused).reversed().thenComparingInt(s -> s.rank));
    for (int k = 1; k <= Math.max(1, byCaused.size() / 4) && k <= byCaused.size(); k++) {
      int next = k < byCaused.size() ? byCaused.get(k).caused : 0;
      if (byCaused.get(k - 1).caused < DOMINANCE * Math.max(1, next)) {
        continue;
      }
      List<Integer> named = new ArrayList<>();
      for (Stats s : byCaused.subList(0, k)) {
        if (s.caused >= MIN_COLLECTIVES && (double) s.caused / significant >= MIN_SHARE
            && s.caused >= MIN_OWN_SHARE * s.late.size()
            && binomialTail(s.caused, significant, 1.0 / stats.size()) <= CHANCE) {
          named.add(s.rank);
        }
      }
      return named.stream().sorted().toList();
    }
    return List.of();
  }

  /**
   * The chance of {@code k} or more successes in {@code n} tries of probability {@code p}: how likely a rank is
   * to be the root of that many of the significant waits if each fell on a random rank.
   */
  static double binomialTail(int k, int n, double p) {
    double tail = 0;
    for (int i = k; i <= n; i++) {
      tail += Math.exp(logChoose(n, i) + i * Math.log(p) + (n - i) * Math.log1p(-p));
    }
    return Math.min(1, tail);
  }

  private static double logChoose(int n, int k) {
    double r = 0;
    for (int i = 1; i <= k; i++) {
      r += Math.log(n - k + i) - Math.log(i);
    }
    return r;
  }

  /** One rank's lateness figures over the window, in collective order. */
  static final class Stats {
    final int rank;
    final List<Long> late = new ArrayList<>();
    final List<Long> times = new ArrayList<>();
    /** Its lateness where it was the root of a significant wait. */
    final List<Long> leads = new ArrayList<>();
    final List<Long> rootIssueLate = new ArrayList<>();
    final List<Long> rootStartLate = new ArrayList<>();
    long waited;
    int timesLast;
    /** Significant waits whose root it is, directly or passed on. */
    int caused;
    long causedWaitNs;
    /** Significant waits where it arrived last only because it had waited for someone upstream. */
    int passedOn;

    Stats(int rank) {
      this.rank = rank;
    }

    long[] lateArray() {
      return late.stream().mapToLong(Long::longValue).toArray();
    }

  }
}
