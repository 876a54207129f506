package dev.frdiag.analysis;

import java.util.List;

/**
 * What a person needs to act on one culprit rank.
 *
 * @param rank global rank
 * @param host host name, "?" when unknown
 * @param pid process id, 0 when unknown
 * @param cudaDevice CUDA device ordinal, -1 when unknown
 * @param lastOp the newest record the rank holds, e.g. "tp0#41 _reduce_scatter_base completed"; empty if none
 * @param stack the stack of the op it is stuck at or last issued, innermost first, as "name (file:line)"
 * @param records the rank's own records the verdict rests on, one line each as it recorded them: those of the stuck
 *     operation's group around the stuck seq (the grid's columns), or its newest record when it holds none there
 */
public record Culprit(int rank, String host, long pid, int cudaDevice, String lastOp, List<String> stack,
    List<String> records) {
  public Culprit {
    stack = List.copyOf(stack);
    records = records == null ? List.of() : List.copyOf(records);
  }

  /** A culprit without its records (reports written before they were kept, tests). */
  public Culprit(int rank, String host, long pid, int cudaDevice, String lastOp, List<String> stack) {
    this(rank, host, pid, cudaDevice, lastOp, stack, List.of());
  }
}
