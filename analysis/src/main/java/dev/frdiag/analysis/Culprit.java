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
 * @param stuckAt for a CPU-side culprit whose stack dump was read: the innermost frame of its main thread, where it
 *     is stuck, as "name (file:line)"; empty otherwise
 * @param stacksFrom what the threads were read from ("dump_traceback", "pyspy_dump", a file name); empty when none
 * @param threads its Python threads with frames, as its stack dump shows them; empty when none was read
 */
public record Culprit(int rank, String host, long pid, int cudaDevice, String lastOp, List<String> stack,
    List<String> records, String stuckAt, String stacksFrom, List<PythonThread> threads) {
  public Culprit {
    stack = List.copyOf(stack);
    records = records == null ? List.of() : List.copyOf(records);
    stuckAt = stuckAt == null ? "" : stuckAt;
    stacksFrom = stacksFrom == null ? "" : stacksFrom;
    threads = threads == null ? List.of() : List.copyOf(threads);
  }

  /** A culprit without stacks (no stack dump was read, reports written before they were kept, tests). */
  public Culprit(int rank, String host, long pid, int cudaDevice, String lastOp, List<String> stack,
      List<String> records) {
    this(rank, host, pid, cudaDevice, lastOp, stack, records, "", "", List.of());
  }

  /** A culprit without its records (reports written before they were kept, tests). */
  public Culprit(int rank, String host, long pid, int cudaDevice, String lastOp, List<String> stack) {
    this(rank, host, pid, cudaDevice, lastOp, stack, List.of());
  }

  /**
   * One Python thread of a culprit as its stack dump shows it.
   *
   * @param id the thread's id as its dump prints it: hex for a pthread id (faulthandler), decimal for a native one
   *     (py-spy)
   * @param name its name; empty when the dump gives none
   * @param main whether it is the thread the verdict reads (the one that issued the rank's collectives)
   * @param idle py-spy's idle flag; false when the dump does not say
   * @param frames innermost first, as "name (file:line)"
   */
  public record PythonThread(String id, String name, boolean main, boolean idle, List<String> frames) {
    public PythonThread {
      name = name == null ? "" : name;
      frames = frames == null ? List.of() : List.copyOf(frames);
    }
  }
}
