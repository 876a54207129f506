package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * One {@code N coll channels, N collnet channels, N nvls channels, N p2p channels, N p2p channels per peer} line.
 *
 * @param host the printing host
 * @param pid the printing process
 * @param commId the communicator the process was last setting up, or empty when unknown
 * @param coll collective channels
 * @param collNet CollNet channels (0 when the line's version does not print them)
 * @param nvls NVLS channels
 * @param p2p point-to-point channels
 * @param p2pPerPeer point-to-point channels per peer
 */
public record ChannelSummary(String host, int pid, String commId, int coll, int collNet, int nvls, int p2p,
    int p2pPerPeer) {
  public ChannelSummary {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(commId, "commId");
  }
}
