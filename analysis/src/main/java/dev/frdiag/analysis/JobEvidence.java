package dev.frdiag.analysis;

import dev.frdiag.proto.v1.NodeContext;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * The input of one analysis: every rank's evidence plus, for live jobs, when it was observed.
 *
 * @param jobId the job
 * @param worldSize number of ranks the job has (ranks with no evidence at all count as missing)
 * @param ranks per rank evidence, in any order (the analysis sorts it)
 * @param observedAtNs epoch ns of the observation; 0 for offline evidence (dumps), which is then assumed
 *     to have been written because the job hung
 * @param stallThreshold for live evidence: how long a group must make no progress to count as stuck
 * @param context what each node's NCCL logs and InfiniBand counters say; may be empty
 */
public record JobEvidence(String jobId, int worldSize, List<RankEvidence> ranks, long observedAtNs,
    Duration stallThreshold, List<NodeContext> context) {

  /** Evidence without node context. */
  public JobEvidence(String jobId, int worldSize, List<RankEvidence> ranks, long observedAtNs,
      Duration stallThreshold) {
    this(jobId, worldSize, ranks, observedAtNs, stallThreshold, List.of());
  }

  public JobEvidence {
    context = context == null ? List.of() : List.copyOf(context);
    Objects.requireNonNull(jobId, "jobId");
    Objects.requireNonNull(stallThreshold, "stallThreshold");
    ranks = ranks.stream().sorted(Comparator.comparingInt(RankEvidence::rank)).toList();
    for (int i = 1; i < ranks.size(); i++) {
      if (ranks.get(i).rank() == ranks.get(i - 1).rank()) {
        throw new IllegalArgumentException("rank " + ranks.get(i).rank() + " appears twice in the evidence");
      }
    }
    int highest = ranks.isEmpty() ? -1 : ranks.get(ranks.size() - 1).rank();
    if (worldSize <= highest) {
      worldSize = highest + 1;
    }
  }

  /** True for evidence read from files after the fact (no clock, no liveness). */
  public boolean offline() {
    return observedAtNs == 0;
  }
}
