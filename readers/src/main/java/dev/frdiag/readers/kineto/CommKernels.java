package dev.frdiag.readers.kineto;

import java.util.Locale;

/**
 * Communication kernels told by name, for traces whose kernels carry no collective keys: NCCL's
 * {@code ncclKernel_*} (before 2.19) and {@code ncclDevKernel_*}, RCCL's, and the custom all-reduce kernels of
 * inference engines ({@code cross_device_reduce_*}, {@code allreduce_fusion*}). A name is a hint, not a fact: one
 * NCCL launch may run several operations and its name gives the first (NVIDIA/nccl#739).
 */
final class CommKernels {
  private CommKernels() {}

  /** Whether {@code name} is a communication kernel's. */
  static boolean isCommunication(String name) {
    if (name.startsWith("nccl") || name.startsWith("cross_device_reduce") || name.contains("allreduce_fusion")) {
      return true;
    }
    return name.regionMatches(true, 0, "rccl", 0, 4) || name.toLowerCase(Locale.ROOT).contains("rccl");
  }

  /**
   * The operation a communication kernel's name gives: "AllReduce" of {@code ncclKernel_AllReduce_RING_LL_Sum_float(…)}
   * or {@code ncclDevKernel_AllReduce_Sum_f32_RING_LL}, "Generic" of RCCL's {@code ncclDevKernel_Generic_1},
   * "allreduce" of the custom kernels.
   */
  static String op(String name) {
    if (name.startsWith("cross_device_reduce") || name.contains("allreduce_fusion")) {
      return "allreduce";
    }
    int paren = name.indexOf('(');
    String bare = paren < 0 ? name : name.substring(0, paren);
    String[] parts = bare.split("_");
    return parts.length > 1 ? parts[1] : bare;
  }

  /** Whether the operation a kernel name gives is point-to-point. */
  static boolean isP2p(String op) {
    String o = op.toLowerCase(Locale.ROOT);
    return o.equals("sendrecv") || o.equals("send") || o.equals("recv");
  }
}
