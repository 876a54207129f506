package dev.frdiag.analysis;

import static dev.frdiag.analysis.StragglerAnalyzer.median;
import static dev.frdiag.analysis.StragglerAnalyzer.ms;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Each rank's clock offset over a window, so that arrivals on different hosts compare: the median over collectives
 * of how much later its end is than the members' median end. A blocking collective ends together on every member
 * (the last arriver releases them all), so ends disagree only by the clocks; P2P and rooted ops (a broadcast's
 * root may finish first) are left out.
 */
final class ClockOffsets {
  /** Collectives with an end on every member needed to align a rank's clock. */
  static final int MIN_ALIGNING = 3;
  /** Clock offsets shown in the evidence from this size on. */
  static final long OFFSET_SHOWN_NS = 1_000_000;

  private final Map<Integer, Long> offsets;

  private ClockOffsets(Map<Integer, Long> offsets) {
    this.offsets = offsets;
  }

  /** The offsets the joined collectives' ends give; 0 for a rank with fewer than {@link #MIN_ALIGNING} of them. */
  static ClockOffsets align(CollectiveJoin.Result joined) {
    Map<Integer, List<Long>> diffs = new HashMap<>();
    for (CollectiveJoin.Joined j : joined.collectives()) {
      if (j.p2p() || !CollectiveJoin.needsEveryMember(j.op())
          || j.members().stream().anyMatch(m -> m.timing().endNs() == 0)) {
        continue;
      }
      long[] ends = j.members().stream().mapToLong(m -> m.timing().endNs()).toArray();
      long mid = median(ends);
      for (CollectiveJoin.Member m : j.members()) {
        diffs.computeIfAbsent(m.rank(), k -> new ArrayList<>()).add(m.timing().endNs() - mid);
      }
    }
    Map<Integer, Long> offsets = new HashMap<>();
    diffs.forEach((rank, d) -> {
      if (d.size() >= MIN_ALIGNING) {
        offsets.put(rank, median(d.stream().mapToLong(Long::longValue).toArray()));
      }
    });
    return new ClockOffsets(offsets);
  }

  /** How far {@code rank}'s clock is set back; 0 when it was not aligned. */
  long of(int rank) {
    return offsets.getOrDefault(rank, 0L);
  }

  /** The evidence line naming the offsets of {@link #OFFSET_SHOWN_NS} or more; empty when there are none. */
  Optional<Evidence> line() {
    List<Integer> shown = offsets.entrySet().stream().filter(e -> Math.abs(e.getValue()) >= OFFSET_SHOWN_NS)
        .map(Map.Entry::getKey).sorted().toList();
    if (shown.isEmpty()) {
      return Optional.empty();
    }
    String list = shown.stream().limit(8).map(r -> "rank " + r + " " + (of(r) > 0 ? "+" : "")
        + ms(of(r))).collect(Collectors.joining(", "));
    return Optional.of(new Evidence(Evidence.Kind.CLOCK_OFFSET, shown, "Clocks aligned on the "
        + "collectives' ends (a blocking collective ends together on every member): " + list
        + (shown.size() > 8 ? " and " + (shown.size() - 8) + " more" : "")));
  }
}
