package dev.frdiag.readers.pytorch;

import java.util.Locale;
import java.util.Map;

/**
 * PyTorch's two names for one collective: the {@code OpType} its watchdog lines print ({@code _ALLGATHER_BASE})
 * and the profiling name its Flight Recorder records ({@code nccl:_all_gather_base}), so a rank read from its log
 * and one read from its dump compare.
 */
public final class OpTypes {
  /**
   * {@code OpType} (ProcessGroupNCCL's {@code opTypeToString}) to the profiling title each collective passes to
   * the Flight Recorder in ProcessGroupNCCL.cpp, without its {@code nccl:} prefix.
   */
  private static final Map<String, String> PROFILING = Map.ofEntries(
      Map.entry("ALLREDUCE", "all_reduce"),
      Map.entry("ALLREDUCE_COALESCED", "allreduce_coalesced"),
      Map.entry("BROADCAST", "broadcast"),
      Map.entry("REDUCE", "reduce"),
      Map.entry("ALLGATHER", "all_gather"),
      Map.entry("_ALLGATHER_BASE", "_all_gather_base"),
      Map.entry("ALLGATHER_COALESCED", "allgather_coalesced"),
      Map.entry("GATHER", "gather"),
      Map.entry("SCATTER", "scatter"),
      Map.entry("REDUCE_SCATTER", "reduce_scatter"),
      Map.entry("_REDUCE_SCATTER_BASE", "_reduce_scatter_base"),
      Map.entry("ALLTOALL_BASE", "all_to_all"),
      Map.entry("ALLTOALL", "all_to_all"),
      Map.entry("SEND", "send"),
      Map.entry("RECV", "recv"),
      Map.entry("BARRIER", "barrier"),
      Map.entry("COALESCED", "coalesced"));

  private OpTypes() {}

  /** The Flight Recorder name of {@code opType}; an OpType not known here is kept, in lower case. */
  public static String profilingName(String opType) {
    String known = PROFILING.get(opType.toUpperCase(Locale.ROOT));
    return known != null ? known : opType.toLowerCase(Locale.ROOT);
  }
}
