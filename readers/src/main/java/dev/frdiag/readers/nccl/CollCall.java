package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * One collective as a COLL line shows it enqueued: {@code AllReduce: opCount 28c … count 9984512 datatype 7 op 0
 * root 0 comm 0x… [nranks=4] …}.
 *
 * @param opCount NCCL's per-communicator counter
 * @param op the collective, e.g. {@code AllReduce}
 * @param count elements per rank; -1 when the line does not say
 * @param datatype NCCL's datatype number; -1 when the line does not say
 * @param root the root rank (Broadcast, Reduce); -1 when the line does not say
 * @param line the line it was read from
 */
public record CollCall(long opCount, String op, long count, int datatype, int root, long line) {
  public CollCall {
    Objects.requireNonNull(op, "op");
  }

  /** Point-to-point calls carry each peer's own count: no signature to compare across ranks. */
  public boolean isP2p() {
    return op.equals("Send") || op.equals("Recv");
  }

  /** What every member of the communicator must agree on at one opCount: the op, its count, datatype and root. */
  public String signature() {
    boolean rooted = op.equals("Broadcast") || op.equals("Reduce");
    return op + " count " + count + " datatype " + datatype + (rooted ? " root " + root : "");
  }
}
