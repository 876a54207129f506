package dev.frdiag.analysis;

import static dev.frdiag.analysis.StragglerAnalyzer.median;

import java.util.Arrays;

/**
 * One collective's figures after clock alignment: each member's arrival (its device's start where every member has
 * one, else its issue), issue and start, the collective's own latency (the shortest member's start to end) and its
 * bus bandwidth.
 *
 * @param issued null unless every member has an issue time
 * @param start null unless every member has a start time
 * @param basis what arrival is here: "device start", "work start" or "issue"
 */
record Arrivals(CollectiveJoin.Joined joined, int[] ranks, long[] arrival, long[] issued, long[] start,
    long latencyNs, double busGbps, String basis) {

  /** The figures of {@code j}, each member's times set back by its clock offset; null when it has no times. */
  static Arrivals of(CollectiveJoin.Joined j, ClockOffsets offsets, boolean deviceStarts) {
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
      long off = offsets.of(m.rank());
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
    String basis = !allStarts ? "issue" : deviceStarts ? "device start" : "work start";
    return new Arrivals(j, ranks, arrival, issued, start, latency, busGbps, basis);
  }

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
