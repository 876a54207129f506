package dev.frdiag.readers.nccl;

import java.util.List;
import java.util.Objects;

/**
 * One channel of a {@code Trees [0] 1/-1/-1->0->-1 …} line: a rank's children and parent on one tree.
 *
 * @param host the printing host
 * @param pid the printing process
 * @param commId the communicator the process was last setting up, or empty when unknown
 * @param channel the tree channel
 * @param rank the printing rank
 * @param children its children (up to three), without NCCL's {@code -1} placeholders
 * @param parent its parent, or -1 for a root
 */
public record TreeLinks(String host, int pid, String commId, int channel, int rank, List<Integer> children,
    int parent) {
  public TreeLinks {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(commId, "commId");
    children = List.copyOf(children);
  }

  /** True when the rank has no parent on this channel. */
  public boolean root() {
    return parent < 0;
  }
}
