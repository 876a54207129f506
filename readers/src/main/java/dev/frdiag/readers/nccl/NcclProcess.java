package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * One process that printed NCCL lines.
 *
 * @param host the host
 * @param pid the process id
 * @param launcherRank the rank the launcher tagged its output with ({@code [1,3]<stdout>:} or {@code [3] }), or -1
 * @param lines how many NCCL lines it printed
 * @param bootstrap the bootstrap interface it chose ({@code eth0:10.0.0.1<0>}), or empty
 * @param network the network it chose ({@code IB}, {@code Socket}, a plugin's name), or empty
 */
public record NcclProcess(String host, int pid, int launcherRank, long lines, String bootstrap, String network) {
  public NcclProcess {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(bootstrap, "bootstrap");
    Objects.requireNonNull(network, "network");
  }

  @Override
  public String toString() {
    return host + ":" + pid;
  }
}
