package dev.frdiag.agent.discovery;

import java.util.Map;
import java.util.Objects;

/**
 * A PyTorch rank found running on this node.
 *
 * @param rank its global rank (RANK)
 * @param localRank its rank on this node (LOCAL_RANK); -1 when its environment does not say
 * @param worldSize ranks in the job (WORLD_SIZE)
 * @param pid its process id
 * @param runId the torchrun rendezvous id (TORCHELASTIC_RUN_ID); empty when not started by torchrun
 * @param environment the environment it started with, for the scheduler's job identity
 */
public record TorchRank(int rank, int localRank, int worldSize, long pid, String runId,
    Map<String, String> environment) {

  public TorchRank {
    Objects.requireNonNull(runId, "runId");
    environment = Map.copyOf(Objects.requireNonNull(environment, "environment"));
    if (rank < 0 || rank >= worldSize) {
      throw new IllegalArgumentException("rank " + rank + " is outside world size " + worldSize);
    }
  }
}
