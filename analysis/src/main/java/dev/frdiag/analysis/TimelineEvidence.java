package dev.frdiag.analysis;

import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * The input of one straggler analysis: every rank's collectives over one window.
 *
 * @param jobId the job
 * @param ranks per rank, in any order (the analysis sorts it)
 * @param source what the times come from, in the report's words ("profiler traces", "the ranks' records")
 * @param deviceStarts true when start times are a device's kernel starts (GPU traces); false when they are a CPU
 *     thread's (gloo's worker) or absent
 */
public record TimelineEvidence(String jobId, List<RankTimeline> ranks, String source, boolean deviceStarts) {
  public TimelineEvidence {
    Objects.requireNonNull(jobId, "jobId");
    Objects.requireNonNull(source, "source");
    ranks = ranks.stream().sorted(Comparator.comparingInt(RankTimeline::rank)).toList();
    for (int i = 1; i < ranks.size(); i++) {
      if (ranks.get(i).rank() == ranks.get(i - 1).rank()) {
        throw new IllegalArgumentException("rank " + ranks.get(i).rank() + " appears twice in the timelines");
      }
    }
  }
}
