package dev.frdiag.readers.kineto;

import java.util.List;
import java.util.Objects;

/**
 * What one rank's profiler trace shows.
 *
 * @param rank the global rank
 * @param rankFrom where the rank was read: "distributedInfo", "the file name", "args.rank", "the process name"
 * @param worldSize ranks in the job per {@code distributedInfo}; 0 when unknown
 * @param backend "nccl", "gloo", …; empty when unknown
 * @param host the host name the trace gives; empty when none
 * @param collectives its collectives in the order it ran them
 * @param compute its device's compute kernels as [start, end) pairs in epoch ns, unsorted; empty without a device
 * @param communication its communication kernels, likewise
 */
public record RankTrace(int rank, String rankFrom, int worldSize, String backend, String host,
    List<TraceCollective> collectives, long[] compute, long[] communication) {

  public RankTrace {
    Objects.requireNonNull(rankFrom, "rankFrom");
    backend = backend == null ? "" : backend;
    host = host == null ? "" : host;
    collectives = List.copyOf(collectives);
    Objects.requireNonNull(compute, "compute");
    Objects.requireNonNull(communication, "communication");
  }

  /** Whether the trace holds device kernels at all (a CPU-only trace has none). */
  public boolean hasDevice() {
    return compute.length > 0 || communication.length > 0;
  }
}
