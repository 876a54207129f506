package dev.frdiag.analysis;

import java.util.List;
import java.util.Objects;

/**
 * The figures of a straggler analysis, for reports and their page: how late each rank arrived at the collectives
 * of a window, and the most skewed collectives.
 *
 * @param basis what "arrived" means here: "device start", "gloo work start" or "issue"
 * @param joinedBy how collectives were joined across ranks ("Seq", "order within the group", …)
 * @param collectives collectives joined across ranks in the window
 * @param thresholdNs lateness from which a rank counts as late
 * @param normalSpreadNs how far the ranks' arrivals normally spread (the median over collectives of their median
 *     absolute deviation); 0 when no collective had four members or more
 * @param windowStartNs epoch ns of the window's first collective
 * @param bucketNs the width of each of {@link Rank#lateByBucketNs()}'s buckets
 * @param ranks per rank, by rank
 * @param worst the collectives whose arrivals spread most, most first (at most {@link #WORST_SHOWN})
 */
public record Lateness(String basis, String joinedBy, int collectives, long thresholdNs, long normalSpreadNs,
    long windowStartNs, long bucketNs, List<Rank> ranks, List<Collective> worst) {
  /** Collectives listed in {@link #worst()}. */
  public static final int WORST_SHOWN = 10;

  public Lateness {
    Objects.requireNonNull(basis, "basis");
    Objects.requireNonNull(joinedBy, "joinedBy");
    ranks = List.copyOf(ranks);
    worst = List.copyOf(worst);
  }

  /**
   * One rank over the window.
   *
   * @param rank global rank
   * @param host its host; empty when unknown
   * @param collectives collectives it took part in that were joined
   * @param timesLast how often it arrived last
   * @param medianLateNs the median of its lateness: its arrival minus the median of the other members'
   * @param maxLateNs its largest lateness
   * @param waitedNs its own waits summed: the latest member's arrival minus its own, over its collectives
   * @param clockOffsetNs how far its clock was set back to align the collectives' ends; 0 when not aligned
   * @param exposedCommNs its communication no compute hid; -1 without device kernels
   * @param hiddenShare the share of its communication hidden behind compute, 0..1; -1 without device kernels
   * @param lateByBucketNs its median lateness in each bucket of the window, null where it joined none
   * @param culprit named a straggler
   */
  public record Rank(int rank, String host, int collectives, int timesLast, long medianLateNs, long maxLateNs,
      long waitedNs, long clockOffsetNs, long exposedCommNs, double hiddenShare, List<Long> lateByBucketNs,
      boolean culprit) {
    public Rank {
      host = host == null ? "" : host;
      // Nulls mark buckets without a collective; List.copyOf refuses them.
      lateByBucketNs = lateByBucketNs == null ? List.of()
          : java.util.Collections.unmodifiableList(new java.util.ArrayList<>(lateByBucketNs));
    }
  }

  /**
   * One collective as its members reached it.
   *
   * @param collective "0#12 allreduce", or "tp allreduce (#3 in order)"
   * @param lastRank the member that arrived last
   * @param skewNs the latest arrival minus the earliest
   * @param latencyNs the collective's own time: the shortest member's start-to-end; 0 when unknown
   * @param busGbps bus bandwidth in GB/s (nccl-tests' definition) over that latency; 0 when unknown
   */
  public record Collective(String collective, int lastRank, long skewNs, long latencyNs, double busGbps) {}
}
