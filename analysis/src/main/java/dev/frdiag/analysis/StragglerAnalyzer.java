package dev.frdiag.analysis;

import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Names the ranks that arrive late at collectives, from when each rank reached each collective over a window: the
 * same engine for profiler traces read offline and for the records the daemon receives live.
 *
 * <p>Per collective: each member's arrival (its device's start where every member has one, else its issue), the
 * last arriver, each member's wait (latest arrival − own), the skew, the collective's own latency (the shortest
 * member's start to end) and its bus bandwidth. Per rank over the window: how often and by how much it arrives
 * after the other members, its waits, and how much of its communication compute hid. A rank is a straggler when
 * its lateness is consistent and beyond the job's normal spread (docs/DIAGNOSIS.md §13). A pure function: no I/O,
 * no clock; thread-safe.
 */
public final class StragglerAnalyzer {
  /** Collectives a rank must have joined before it can be named. */
  static final int MIN_COLLECTIVES = 5;
  /**
   * Lateness below this is never a straggler's: scheduling jitter of a healthy job (a healthy real gloo job on a
   * loaded machine had a rank 2-11 ms late at some collectives of most steps).
   */
  static final long MIN_LATE_NS = 5_000_000;
  /** How many times the job's normal spread a straggler's median lateness must reach. */
  static final double SPREAD_FACTOR = 4;
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
  /** Below this many collectives joined, "no straggler" is less sure. */
  static final int FEW_COLLECTIVES = 20;
  /** Below this many waits it caused, a straggler's naming is less sure. */
  static final int FEW_WAITS = 10;
  /** Clock offsets shown in the evidence from this size on. */
  static final long OFFSET_SHOWN_NS = 1_000_000;
  /** Collectives with an end on every member needed to align a rank's clock. */
  static final int MIN_ALIGNING = 3;
  /** A rank's recent collectives looked back on when its lateness may be a wait passed on. */
  static final int HISTORY = 32;
  /** Buckets of the lateness picture. */
  static final int BUCKETS = 24;

  private StragglerAnalyzer() {}

  /** Analyses {@code in}. */
  public static Diagnosis analyze(TimelineEvidence in) {
    return new Run(in).diagnosis();
  }

  /** One collective's figures after clock alignment. */
  private record Arrivals(CollectiveJoin.Joined joined, int[] ranks, long[] arrival, long[] issued, long[] start,
      long latencyNs, double busGbps, String basis) {
    long latest() {
      return Arrays.stream(arrival).max().orElse(0);
    }

    int lastRank() {
      int best = 0;
      for (int i = 1; i < arrival.length; i++) {
        if (arrival[i] > arrival[best]) {
          best = i;
        }
      }
      return ranks[best];
    }

    /** The member's arrival minus the median of the other members'. */
    long lateness(int i, long[] times) {
      long[] others = new long[times.length - 1];
      for (int k = 0, j = 0; k < times.length; k++) {
        if (k != i) {
          others[j++] = times[k];
        }
      }
      return times[i] - median(others);
    }
  }

  private static final class Run {
    private final TimelineEvidence in;
    private final Map<Integer, RankTimeline> byRank = new TreeMap<>();
    private final Map<Integer, Long> offsets = new HashMap<>();
    private final CollectiveJoin.Result joined;
    private final List<Arrivals> arrivals = new ArrayList<>();

    Run(TimelineEvidence in) {
      this.in = in;
      in.ranks().forEach(r -> byRank.put(r.rank(), r));
      joined = CollectiveJoin.join(in.ranks());
      alignClocks();
      for (CollectiveJoin.Joined j : joined.collectives()) {
        Arrivals a = arrivals(j);
        if (a != null) {
          arrivals.add(a);
        }
      }
    }

    /**
     * Each rank's clock offset: the median over collectives of how much later its end is than the members'
     * median end. A blocking collective ends together on every member (the last arriver releases them all), so
     * ends disagree only by the clocks; P2P and rooted ops (a broadcast's root may finish first) are left out.
     */
    private void alignClocks() {
      Map<Integer, List<Long>> diffs = new HashMap<>();
      for (CollectiveJoin.Joined j : joined.collectives()) {
        String f = CollectiveJoin.family(j.op());
        boolean blocking = f.equals("allreduce") || f.equals("allgather") || f.equals("reducescatter")
            || f.equals("alltoall") || f.equals("barrier");
        if (j.p2p() || !blocking || j.members().stream().anyMatch(m -> m.timing().endNs() == 0)) {
          continue;
        }
        long[] ends = j.members().stream().mapToLong(m -> m.timing().endNs()).toArray();
        long mid = median(ends);
        for (CollectiveJoin.Member m : j.members()) {
          diffs.computeIfAbsent(m.rank(), k -> new ArrayList<>()).add(m.timing().endNs() - mid);
        }
      }
      diffs.forEach((rank, d) -> {
        if (d.size() >= MIN_ALIGNING) {
          offsets.put(rank, median(d.stream().mapToLong(Long::longValue).toArray()));
        }
      });
    }

    private long offset(int rank) {
      return offsets.getOrDefault(rank, 0L);
    }

    private Arrivals arrivals(CollectiveJoin.Joined j) {
      int n = j.members().size();
      boolean allStarts = j.members().stream().allMatch(m -> m.timing().startNs() != 0);
      boolean allIssued = j.members().stream().allMatch(m -> m.timing().issuedNs() != 0);
      if (!allStarts && !allIssued) {
        return null;
      }
      int[] ranks = new int[n];
      long[] arrival = new long[n];
      long[] issued = allIssued ? new long[n] : null;
      long[] start = allStarts ? new long[n] : null;
      long latency = Long.MAX_VALUE;
      long bytes = 0;
      for (int i = 0; i < n; i++) {
        CollectiveJoin.Member m = j.members().get(i);
        CollectiveTiming t = m.timing();
        long off = offset(m.rank());
        ranks[i] = m.rank();
        arrival[i] = t.arrivalNs(allStarts) - off;
        if (issued != null) {
          issued[i] = t.issuedNs() - off;
        }
        if (start != null) {
          start[i] = t.startNs() - off;
        }
        if (t.startNs() != 0 && t.endNs() > t.startNs()) {
          latency = Math.min(latency, t.endNs() - t.startNs());
        }
        bytes = Math.max(bytes, t.bytes());
      }
      latency = latency == Long.MAX_VALUE ? 0 : latency;
      int groupSize = j.members().get(0).timing().members().isEmpty() ? n
          : j.members().get(0).timing().members().size();
      double busGbps = latency > 0 && bytes > 0
          ? bytes * CollectiveJoin.busFactor(j.op(), groupSize) / latency : 0;
      String basis = !allStarts ? "issue" : in.deviceStarts() ? "device start" : "work start";
      return new Arrivals(j, ranks, arrival, issued, start, latency, busGbps, basis);
    }

    Diagnosis diagnosis() {
      long spread = normalSpread();
      long threshold = Math.max(MIN_LATE_NS, (long) (SPREAD_FACTOR * spread));
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
      int significant = attribute(stats, threshold);
      List<Integer> culprits = culprits(stats, significant);
      Lateness figures = figures(stats, culprits, threshold, spread);
      List<Evidence> evidence = new ArrayList<>();
      if (arrivals.size() < MIN_COLLECTIVES || stats.size() < 2) {
        evidence.add(joinedLine());
        evidence.add(new Evidence(Evidence.Kind.INSUFFICIENT, List.of(), arrivals.size() + " collective"
            + (arrivals.size() == 1 ? " was" : "s were") + " joined across ranks in " + in.source()
            + "; naming a straggler takes " + MIN_COLLECTIVES + " at least, each with two members or more"));
        return new Diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), List.of(), null, 0.3,
            evidence, List.of(), List.of(), List.of(), "Too few collectives joined across ranks to tell a "
            + "straggler (" + arrivals.size() + ").", "Profile more steps on every rank (each rank's trace over the "
            + "same steps), or let the job run longer.", 0).withLateness(figures);
      }
      if (culprits.isEmpty()) {
        evidence.add(new Evidence(Evidence.Kind.SKEW, List.of(), "No rank arrives late consistently: "
            + skewWords(stats, threshold, spread)));
        evidence.add(joinedLine());
        clockLine().ifPresent(evidence::add);
        overlapLine(List.of()).ifPresent(evidence::add);
        double confidence = arrivals.size() >= FEW_COLLECTIVES ? 0.9 : 0.6;
        return new Diagnosis(Verdict.NO_HANG, Symptom.NONE, List.of(), List.of(), null, confidence, evidence,
            List.of(), List.of(), List.of(), "No straggler: across " + arrivals.size() + " collectives no rank "
            + "arrives late consistently (most late: " + mostLate(stats) + ").", "Nothing to do.", 0)
            .withLateness(figures);
      }
      Map<Integer, String> sides = new TreeMap<>();
      for (int rank : culprits) {
        Stats s = stats.get(rank);
        evidence.add(new Evidence(Evidence.Kind.STRAGGLER, List.of(rank), stragglerWords(s, significant)));
        sides.put(rank, side(s, threshold));
        evidence.add(new Evidence(Evidence.Kind.STRAGGLER_SIDE, List.of(rank), sideWords(rank, s, sides.get(rank))));
      }
      evidence.add(new Evidence(Evidence.Kind.SKEW, List.of(), skewWords(stats, threshold, spread)));
      evidence.add(joinedLine());
      clockLine().ifPresent(evidence::add);
      overlapLine(culprits).ifPresent(evidence::add);
      List<String> hosts = culprits.stream().map(r -> byRank.get(r).host()).filter(h -> !h.isEmpty()).distinct()
          .sorted().toList();
      List<Culprit> details = new ArrayList<>();
      for (int rank : culprits) {
        details.add(new Culprit(rank, byRank.get(rank).host().isEmpty() ? "?" : byRank.get(rank).host(), 0, -1,
            "", List.of(), latestLines(rank)));
      }
      String who = Wording.capitalize(Wording.who(culprits));
      Stats first = stats.get(culprits.get(0));
      boolean allCpu = sides.values().stream().allMatch("cpu"::equals);
      boolean allGpu = sides.values().stream().allMatch("gpu"::equals);
      String sideWords = allCpu ? ": " + (culprits.size() == 1 ? "it issues" : "they issue")
          + " them late (CPU side)" : allGpu ? ": " + (culprits.size() == 1 ? "its device starts" : "their devices "
          + "start") + " them late though issued on time (GPU side)" : "";
      String headline = who + " arrive" + (culprits.size() == 1 ? "s" : "") + " last at " + first.caused + " of "
          + significant + " collectives where the members waited, a median " + ms(median(toArray(first.leads)))
          + " after the others" + sideWords + ".";
      String recommendation = allGpu
          ? "Check the GPU of " + Wording.who(culprits) + " (nvidia-smi -q -d PERFORMANCE,CLOCK,ECC: throttling, "
          + "clocks, errors; a slower or different device) and what runs on it besides the job: its kernels before "
          + "each collective take longer than its peers'."
          : "Look at what " + Wording.who(culprits) + (hosts.isEmpty() ? "" : " (" + String.join(", ", hosts) + ")")
          + " does between collectives: data loading, Python work, CPU contention or throttling (py-spy dump, top); "
          + "every other rank waits for " + (culprits.size() == 1 ? "it" : "them") + " at each collective.";
      double confidence = confidence(culprits, stats);
      return new Diagnosis(Verdict.SLOW, Symptom.STRAGGLER, culprits, hosts, reference(culprits.get(0)),
          confidence, evidence, details, List.of(), List.of(), headline, recommendation, 0).withLateness(figures);
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
    private int attribute(Map<Integer, Stats> stats, long threshold) {
      int[] root = new int[arrivals.size()];
      Map<Integer, java.util.ArrayDeque<long[]>> history = new HashMap<>();
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
          for (long[] h : history.getOrDefault(last, new java.util.ArrayDeque<>())) {
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
          java.util.ArrayDeque<long[]> h = history.computeIfAbsent(a.ranks()[i], k -> new java.util.ArrayDeque<>());
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
     * {@link #MIN_COLLECTIVES}, of {@link #MIN_SHARE} of them, of waits at {@link #MIN_OWN_SHARE} of its own
     * collectives, and of more than chance would give ({@link #CHANCE}). A healthy job's waits fall on every rank, some more than others (a rank its host or the
     * agent's polls slow a little): no such gap.
     */
    private List<Integer> culprits(Map<Integer, Stats> stats, int significant) {
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

    /** The median over collectives of four members or more of their arrivals' median absolute deviation. */
    private long normalSpread() {
      List<Long> spreads = new ArrayList<>();
      for (Arrivals a : arrivals) {
        if (a.arrival().length >= 4) {
          long mid = median(a.arrival());
          spreads.add(median(Arrays.stream(a.arrival()).map(t -> Math.abs(t - mid)).toArray()));
        }
      }
      return spreads.isEmpty() ? 0 : median(spreads.stream().mapToLong(Long::longValue).toArray());
    }

    private double confidence(List<Integer> culprits, Map<Integer, Stats> stats) {
      EnumMap<CollectiveJoin.By, Integer> by = new EnumMap<>(CollectiveJoin.By.class);
      for (Arrivals a : arrivals) {
        by.merge(a.joined().by(), 1, Integer::sum);
      }
      CollectiveJoin.By mostly = by.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
      double c = switch (mostly) {
        case SEQ -> 0.9;
        case ORDER -> 0.8;
        case KERNEL_ORDER -> 0.7;
      };
      int fewest = culprits.stream().mapToInt(r -> stats.get(r).caused).min().orElse(0);
      return fewest < FEW_WAITS ? Math.min(c, 0.7) : c;
    }

    /** "cpu" when the rank's issues are late by half its lateness or more, "gpu" when only its starts are. */
    private String side(Stats s, long threshold) {
      if (s.rootIssueLate.isEmpty()) {
        return "";
      }
      long issue = median(toArray(s.rootIssueLate));
      if (s.rootStartLate.isEmpty() || !in.deviceStarts()) {
        return issue >= threshold / 2 ? "cpu" : "";
      }
      long start = median(toArray(s.rootStartLate));
      return issue >= start / 2 ? "cpu" : "gpu";
    }

    private String sideWords(int rank, Stats s, String side) {
      String issue = s.rootIssueLate.isEmpty() ? "" : "its issue a median " + ms(median(toArray(s.rootIssueLate)))
          + " after the others'";
      String start = s.rootStartLate.isEmpty() || !in.deviceStarts() ? "" : "its device's start a median "
          + ms(median(toArray(s.rootStartLate))) + " after the others'";
      String both = issue.isEmpty() ? start : start.isEmpty() ? issue : issue + ", " + start;
      return switch (side) {
        case "cpu" -> "Rank " + rank + " is late on the CPU side: " + both + " (the CPU reaches each collective "
            + "late)";
        case "gpu" -> "Rank " + rank + " is late on the GPU side: " + both + " (issued in time, its device gets "
            + "to it late)";
        default -> "Rank " + rank + ": which side is late cannot be told (" + (both.isEmpty() ? "only one time per "
            + "collective" : both) + ")";
      };
    }

    private String stragglerWords(Stats s, int significant) {
      long[] leads = toArray(s.leads);
      return "Rank " + s.rank + " arrived last, beyond the normal skew, at " + s.leads.size() + " collectives"
          + (s.caused > s.leads.size() ? " and held " + (s.caused - s.leads.size()) + " more up through ranks "
          + "that waited for it first" : "") + ": " + s.caused + " of the window's " + significant + " significant "
          + "waits (" + s.late.size() + " collectives of its own), a median " + ms(median(leads)) + " after the "
          + "other members (at most " + ms(Arrays.stream(leads).max().orElse(0)) + "); the members waited "
          + ms(s.causedWaitNs) + " for it in all";
    }

    private String skewWords(Map<Integer, Stats> stats, long threshold, long spread) {
      return "the members' arrivals normally spread " + ms(spread) + " (median absolute deviation per collective"
          + (arrivals.stream().noneMatch(a -> a.arrival().length >= 4) ? ", no collective of four members or more"
          : "") + "); a wait is significant when the "
          + "last member arrives " + ms(threshold) + " or more after the others' median (" + SPREAD_FACTOR
          + " times that spread, at least " + ms(MIN_LATE_NS) + "); arrival is each member's " + basisWords();
    }

    private String basisWords() {
      Map<String, Long> counts = arrivals.stream().collect(Collectors.groupingBy(Arrivals::basis,
          TreeMap::new, Collectors.counting()));
      return counts.entrySet().stream().map(e -> e.getKey() + " (" + e.getValue() + ")")
          .collect(Collectors.joining(", "));
    }

    private String mostLate(Map<Integer, Stats> stats) {
      return stats.values().stream().max(Comparator.comparingLong(s -> median(s.lateArray())))
          .map(s -> "rank " + s.rank + ", a median " + ms(median(s.lateArray()))).orElse("none");
    }

    private Evidence joinedLine() {
      EnumMap<CollectiveJoin.By, Integer> by = new EnumMap<>(CollectiveJoin.By.class);
      for (Arrivals a : arrivals) {
        by.merge(a.joined().by(), 1, Integer::sum);
      }
      StringBuilder sb = new StringBuilder(arrivals.size() + " collective" + (arrivals.size() == 1 ? "" : "s")
          + " of " + in.ranks().size() + " ranks joined from " + in.source());
      if (!by.isEmpty()) {
        sb.append(": ").append(by.entrySet().stream().map(e -> e.getValue() + " by " + e.getKey().words)
            .collect(Collectors.joining(", ")));
      }
      if (joined.commsIdDisagreements() > 0) {
        sb.append("; ").append(joined.commsIdDisagreements()).append(" member").append(
            joined.commsIdDisagreements() == 1 ? "" : "s").append(" left out where its Comms Id disagreed with "
            + "the others' at the same Seq");
      }
      if (joined.opDisagreements() > 0) {
        sb.append("; ").append(joined.opDisagreements()).append(" left out where its op differed from the "
            + "others' at the same place in order");
      }
      if (joined.p2pUnjoined() > 0) {
        sb.append("; ").append(joined.p2pUnjoined()).append(" send/recv without Seq in groups of more than two "
            + "not joined");
      }
      return new Evidence(Evidence.Kind.JOINED, List.of(), sb.toString());
    }

    private java.util.Optional<Evidence> clockLine() {
      List<Integer> shown = offsets.entrySet().stream().filter(e -> Math.abs(e.getValue()) >= OFFSET_SHOWN_NS)
          .map(Map.Entry::getKey).sorted().toList();
      if (shown.isEmpty()) {
        return java.util.Optional.empty();
      }
      String list = shown.stream().limit(8).map(r -> "rank " + r + " " + (offset(r) > 0 ? "+" : "")
          + ms(offset(r))).collect(Collectors.joining(", "));
      return java.util.Optional.of(new Evidence(Evidence.Kind.CLOCK_OFFSET, shown, "Clocks aligned on the "
          + "collectives' ends (a blocking collective ends together on every member): " + list
          + (shown.size() > 8 ? " and " + (shown.size() - 8) + " more" : "")));
    }

    private java.util.Optional<Evidence> overlapLine(List<Integer> culprits) {
      List<RankTimeline> known = in.ranks().stream().filter(r -> r.overlap().known()).toList();
      if (known.isEmpty()) {
        return java.util.Optional.empty();
      }
      StringBuilder sb = new StringBuilder("Communication hidden behind compute (kernel intervals united): ");
      List<String> parts = new ArrayList<>();
      for (RankTimeline r : known) {
        if (culprits.contains(r.rank()) || known.size() <= 4) {
          parts.add("rank " + r.rank() + " " + percent(r.overlap().hiddenShare()) + ", " + ms(r.overlap()
              .exposedNs()) + " exposed");
        }
      }
      List<RankTimeline> others = known.stream().filter(r -> !culprits.contains(r.rank())).toList();
      if (known.size() > 4 && !others.isEmpty()) {
        double lo = others.stream().mapToDouble(r -> r.overlap().hiddenShare()).min().orElse(0);
        double hi = others.stream().mapToDouble(r -> r.overlap().hiddenShare()).max().orElse(0);
        parts.add("the other " + others.size() + " ranks " + (percent(lo).equals(percent(hi)) ? percent(lo)
            : percent(lo) + "-" + percent(hi)));
      }
      sb.append(String.join("; ", parts));
      return java.util.Optional.of(new Evidence(Evidence.Kind.OVERLAP, culprits, sb.toString()));
    }

    /** The culprit's most late collectives, one line each (at most 5), for its culprit section. */
    private List<String> latestLines(int rank) {
      List<String[]> rows = new ArrayList<>();
      List<long[]> keys = new ArrayList<>();
      for (Arrivals a : arrivals) {
        for (int i = 0; i < a.ranks().length; i++) {
          if (a.ranks()[i] == rank) {
            long l = a.lateness(i, a.arrival());
            keys.add(new long[] {l, rows.size()});
            rows.add(new String[] {a.joined().label() + ": arrived " + ms(l) + " after the others' median"
                + (a.lastRank() == rank ? ", last" : "")});
          }
        }
      }
      keys.sort(Comparator.comparingLong((long[] k) -> -k[0]));
      return keys.stream().limit(5).map(k -> rows.get((int) k[1])[0]).toList();
    }

    /** The collective where the culprit was latest, to name in the report. */
    private CollectiveRef reference(int rank) {
      Arrivals worst = null;
      long most = Long.MIN_VALUE;
      for (Arrivals a : arrivals) {
        for (int i = 0; i < a.ranks().length; i++) {
          if (a.ranks()[i] == rank) {
            long l = a.lateness(i, a.arrival());
            if (l > most) {
              most = l;
              worst = a;
            }
          }
        }
      }
      if (worst == null) {
        return null;
      }
      CollectiveJoin.Joined j = worst.joined();
      String id = j.commsId().isEmpty() ? "" : String.format("%016x", Long.parseUnsignedLong(j.commsId()));
      return new CollectiveRef(j.group().isEmpty() ? "kernels" : j.group(), "", j.by() == CollectiveJoin.By.SEQ
          ? j.position() : j.position() + 1, j.p2p(), j.op(), id);
    }

    private Lateness figures(Map<Integer, Stats> stats, List<Integer> culprits, long threshold, long spread) {
      long first = arrivals.stream().mapToLong(a -> Arrays.stream(a.arrival()).min().orElse(0)).min().orElse(0);
      long lastT = arrivals.stream().mapToLong(Arrivals::latest).max().orElse(first);
      long bucket = Math.max(1, (lastT - first) / BUCKETS + 1);
      List<Lateness.Rank> rows = new ArrayList<>();
      for (RankTimeline r : in.ranks()) {
        Stats s = stats.get(r.rank());
        if (s == null) {
          continue;
        }
        List<List<Long>> perBucket = new ArrayList<>();
        for (int b = 0; b < BUCKETS; b++) {
          perBucket.add(new ArrayList<>());
        }
        for (int i = 0; i < s.times.size(); i++) {
          int b = (int) Math.min(BUCKETS - 1, (s.times.get(i) - first) / bucket);
          perBucket.get(b).add(s.late.get(i));
        }
        List<Long> byBucket = new ArrayList<>();
        for (List<Long> l : perBucket) {
          byBucket.add(l.isEmpty() ? null : median(l.stream().mapToLong(Long::longValue).toArray()));
        }
        long[] late = s.lateArray();
        Overlap o = r.overlap();
        rows.add(new Lateness.Rank(r.rank(), r.host(), late.length, s.timesLast, median(late),
            Arrays.stream(late).max().orElse(0), s.waited, offset(r.rank()), o.known() ? o.exposedNs() : -1,
            o.known() ? o.hiddenShare() : -1, byBucket, culprits.contains(r.rank())));
      }
      List<Lateness.Collective> worst = arrivals.stream()
          .sorted(Comparator.comparingLong((Arrivals a) -> a.latest() - Arrays.stream(a.arrival()).min()
              .orElse(0)).reversed())
          .limit(Lateness.WORST_SHOWN)
          .map(a -> new Lateness.Collective(a.joined().label(), a.lastRank(), a.latest() - Arrays.stream(
              a.arrival()).min().orElse(0), a.latencyNs(), a.busGbps()))
          .toList();
      EnumMap<CollectiveJoin.By, Integer> by = new EnumMap<>(CollectiveJoin.By.class);
      arrivals.forEach(a -> by.merge(a.joined().by(), 1, Integer::sum));
      String joinedBy = by.keySet().stream().map(b -> b.words).collect(Collectors.joining(", "));
      String basis = arrivals.stream().map(Arrivals::basis).distinct().sorted().collect(Collectors.joining(", "));
      return new Lateness(basis, joinedBy, arrivals.size(), threshold, spread, first, bucket, rows, worst);
    }
  }

  /** One rank's lateness figures over the window, in collective order. */
  private static final class Stats {
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

  private static long[] toArray(List<Long> values) {
    return values.stream().mapToLong(Long::longValue).toArray();
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

  /** The median (the lower middle of an even count); 0 of nothing. Leaves its argument as it is. */
  static long median(long[] values) {
    if (values.length == 0) {
      return 0;
    }
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    int n = sorted.length;
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  static String ms(long ns) {
    // No "-0.0 ms" for a rank a few microseconds early.
    return String.format(Locale.ROOT, "%.1f ms", Math.abs(ns) < 50_000 ? 0 : ns / 1e6);
  }

  private static String percent(double share) {
    return String.format(Locale.ROOT, "%.0f %%", share * 100);
  }
}
