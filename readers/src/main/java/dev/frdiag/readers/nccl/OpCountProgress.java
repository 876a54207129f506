package dev.frdiag.readers.nccl;

import java.util.List;
import java.util.Objects;

/**
 * The last collective one rank enqueued on one communicator, from {@code COLL} lines
 * ({@code AllReduce: opCount 1a2 … comm 0x… [nranks=16] …}).
 *
 * @param commId the communicator's commId when its Init line was seen, else empty
 * @param commPtr the {@code comm 0x…} pointer, local to the process
 * @param host the host
 * @param pid the process
 * @param rank the rank in the communicator when its Init line was seen, else -1
 * @param nranks the communicator's size from {@code [nranks=N]}
 * @param lastOpCount the last opCount enqueued (NCCL's per-communicator counter)
 * @param lastCollective the last collective's name, e.g. {@code AllReduce}
 * @param calls how many COLL lines this rank printed for the communicator
 * @param lastLine the line of the last one
 * @param recent the last calls, oldest first ({@code ProcessState.OpState.RECENT} at most)
 */
public record OpCountProgress(String commId, String commPtr, String host, int pid, int rank, int nranks,
    long lastOpCount, String lastCollective, long calls, long lastLine, List<CollCall> recent) {
  public OpCountProgress {
    recent = List.copyOf(recent);
    Objects.requireNonNull(commId, "commId");
    Objects.requireNonNull(commPtr, "commPtr");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(lastCollective, "lastCollective");
  }
}
