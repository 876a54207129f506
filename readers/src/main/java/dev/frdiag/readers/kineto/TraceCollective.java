package dev.frdiag.readers.kineto;

import java.util.Objects;

/**
 * One collective or point-to-point operation one rank ran, as its profiler trace shows it. Times are epoch
 * nanoseconds ({@code baseTimeNanoseconds} plus the event's {@code ts}, kept to the nanosecond), 0 when unknown.
 *
 * @param group the process group; {@link TraceGroup#UNNAMED} when the trace does not say
 * @param seq the group's sequence number of this operation ({@code Seq}); -1 when the trace has none
 * @param commsId PyTorch's {@code Comms Id} as an unsigned 64-bit value; meaningful only when {@code hasCommsId}
 * @param hasCommsId whether the trace carried a {@code Comms Id}
 * @param p2p a send or receive rather than a collective
 * @param op the operation as PyTorch names it ("allreduce", "_allgather_base", "send"), or as the kernel or
 *     annotation name says ("all_reduce", "AllReduce")
 * @param dtype the element type ("Float"); empty when unknown
 * @param elements the larger of its input and output element counts; 0 when unknown
 * @param issuedNs when the CPU issued it ({@code record_param_comms}, or the {@code c10d::} op on gloo)
 * @param startNs when the device started it (its first kernel), or gloo's worker thread began the work
 * @param endNs when the device (or gloo's worker) finished it
 * @param found what in the trace told it
 */
public record TraceCollective(TraceGroup group, long seq, long commsId, boolean hasCommsId, boolean p2p, String op,
    String dtype, long elements, long issuedNs, long startNs, long endNs, Found found) {

  /** What in a trace told a collective. */
  public enum Found {
    /** A {@code record_param_comms} CPU op with the collective's keys, and the kernels linked to it. */
    RECORD_PARAM_COMMS,
    /** A communication kernel alone, by its arguments or its name ({@code ncclDevKernel_*}, RCCL, custom). */
    KERNEL,
    /** gloo's work annotation ({@code gloo:all_reduce}) on the group's worker thread. */
    GLOO_WORK,
    /** An {@code nccl:*} annotation on the CPU, when nothing else shows the collective. */
    ANNOTATION
  }

  public TraceCollective {
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(found, "found");
    dtype = dtype == null ? "" : dtype;
  }

  /** This collective with every time moved by {@code ns}. */
  TraceCollective shifted(long ns) {
    return new TraceCollective(group, seq, commsId, hasCommsId, p2p, op, dtype, elements,
        issuedNs == 0 ? 0 : issuedNs + ns, startNs == 0 ? 0 : startNs + ns, endNs == 0 ? 0 : endNs + ns, found);
  }
}
