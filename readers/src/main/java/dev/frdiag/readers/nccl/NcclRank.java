package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * Where one rank of a communicator runs, as far as the log tells.
 *
 * @param rank the rank in its communicator
 * @param host the host
 * @param pid the process
 * @param cudaDev the CUDA ordinal, or -1 when no Init line was seen
 * @param nvmlDev the NVML index (the {@code [x]} of connection lines), or -1 when unknown
 * @param busId the GPU's PCI bus id in NCCL's hex ({@code 42000}), or empty
 * @param state how far the rank got
 * @param evidence which line says so, e.g. {@code Init START at line 5}
 */
public record NcclRank(int rank, String host, int pid, int cudaDev, int nvmlDev, String busId, State state,
    String evidence) {

  /** How far a rank got, as its lines show. */
  public enum State {
    /** Only seen in a connection line or a launcher tag. */
    SEEN,
    /** {@code Init START} printed. */
    INIT_STARTED,
    /** {@code Init COMPLETE} printed. */
    INIT_COMPLETE,
    /** {@code Destroy COMPLETE} printed. */
    DESTROYED,
    /** {@code Abort COMPLETE} printed. */
    ABORTED
  }

  public NcclRank {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(busId, "busId");
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(evidence, "evidence");
    if (rank < 0) {
      throw new IllegalArgumentException("rank must not be negative, got " + rank);
    }
  }
}
