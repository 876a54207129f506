package dev.frdiag.analysis;

import java.util.List;
import java.util.Objects;

/**
 * When one rank took part in one collective: what the straggler analysis reads, from a profiler trace or from the
 * rank's records. Times are epoch ns by the rank's clock, 0 when unknown.
 *
 * @param group the process group's name; empty when the source does not say (a kernel known by its name)
 * @param members the group's global ranks; empty when unknown
 * @param seq the group's sequence number of the operation; -1 when the source has none
 * @param p2p a send or receive
 * @param commsId PyTorch's comms id; meaningful only when {@code hasCommsId}
 * @param hasCommsId whether the source carried one
 * @param op the operation's name as the source gives it
 * @param bytes what it moves (the larger of input and output, element count × element size); 0 when unknown
 * @param issuedNs when the rank's CPU issued it
 * @param startNs when its device (or gloo's worker) started it
 * @param endNs when it finished there
 */
public record CollectiveTiming(String group, List<Integer> members, long seq, boolean p2p, long commsId,
    boolean hasCommsId, String op, long bytes, long issuedNs, long startNs, long endNs) {
  public CollectiveTiming {
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(op, "op");
    members = List.copyOf(members);
    if (issuedNs == 0 && startNs == 0) {
      throw new IllegalArgumentException("a collective timing needs an issue or a start time: " + group + " " + op);
    }
  }

  /** When the rank reached it: its start where known, else when it was issued. */
  long arrivalNs(boolean byStart) {
    return byStart ? startNs : issuedNs;
  }
}
