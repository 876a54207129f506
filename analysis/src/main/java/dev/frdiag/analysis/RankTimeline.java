package dev.frdiag.analysis;

import java.util.List;
import java.util.Objects;

/**
 * One rank's collectives over a window, for the straggler analysis.
 *
 * @param rank global rank
 * @param host its host; empty when unknown
 * @param collectives the collectives it took part in, in any order
 * @param overlap how its device's communication overlapped its compute; {@link Overlap#UNKNOWN} without device
 *     kernels (records, CPU traces)
 */
public record RankTimeline(int rank, String host, List<CollectiveTiming> collectives, Overlap overlap) {
  public RankTimeline {
    if (rank < 0) {
      throw new IllegalArgumentException("rank must not be negative, got " + rank);
    }
    host = host == null ? "" : host;
    collectives = List.copyOf(collectives);
    Objects.requireNonNull(overlap, "overlap");
  }
}
