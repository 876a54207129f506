package dev.frdiag.analysis;

import dev.frdiag.analysis.WaitRoots.Stats;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumMap;
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
 *
 * <p>The clocks are aligned by {@link ClockOffsets}, each collective's figures are {@link Arrivals}, and which ranks
 * hold the others up is {@link WaitRoots}'s judgement; this class turns them into the diagnosis, its evidence and
 * the lateness picture.
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
  /** Below this many collectives joined, "no straggler" is less sure. */
  static final int FEW_COLLECTIVES = 20;
  /** Below this many waits it caused, a straggler's naming is less sure. */
  static final int FEW_WAITS = 10;
  /** Buckets of the lateness picture. */
  static final int BUCKETS = 24;

  private StragglerAnalyzer() {}

  /** Analyses {@code in}. */
  public static Diagnosis analyze(TimelineEvidence in) {
    return new Run(in).diagnosis();
  }

  private static final class Run {
    private final TimelineEvidence in;
    private final Map<Integer, RankTimeline> byRank = new TreeMap<>();
    private final CollectiveJoin.Result joined;
    private final ClockOffsets offsets;
    private final List<Arrivals> arrivals = new ArrayList<>();

    Run(TimelineEvidence in) {
      this.in = in;
      in.ranks().forEach(r -> byRank.put(r.rank(), r));
      joined = CollectiveJoin.join(in.ranks());
      offsets = ClockOffsets.align(joined);
      for (CollectiveJoin.Joined j : joined.collectives()) {
        Arrivals a = Arrivals.of(j, offsets, in.deviceStarts());
        if (a != null) {
          arrivals.add(a);
        }
      }
    }

    Diagnosis diagnosis() {
      long spread = normalSpread();
      long threshold = Math.max(MIN_LATE_NS, (long) (SPREAD_FACTOR * spread));
      Map<Integer, Stats> stats = WaitRoots.stats(arrivals);
      int significant = WaitRoots.attribute(arrivals, stats, threshold);
      List<Integer> culprits = WaitRoots.culprits(stats, significant);
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
        offsets.line().ifPresent(evidence::add);
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
      offsets.line().ifPresent(evidence::add);
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
            Arrays.stream(late).max().orElse(0), s.waited, offsets.of(r.rank()), o.known() ? o.exposedNs() : -1,
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

  private static long[] toArray(List<Long> values) {
    return values.stream().mapToLong(Long::longValue).toArray();
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
