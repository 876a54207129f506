package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * One {@code Ring NN : prev -> rank -> next} line: a rank's neighbours on one ring channel.
 *
 * @param host the printing host
 * @param pid the printing process
 * @param commId the communicator the process was last setting up, or empty when unknown
 * @param channel the ring channel
 * @param prev the rank this one receives from
 * @param rank the printing rank
 * @param next the rank this one sends to
 */
public record RingNeighbours(String host, int pid, String commId, int channel, int prev, int rank, int next) {
  public RingNeighbours {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(commId, "commId");
  }
}
