package dev.frdiag.readers.pytorch;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads, one line at a time, what torch.distributed raised outside the watchdog's lines: Python tracebacks that end
 * in a {@code torch/distributed} call ({@code dist.all_reduce} raising {@code RuntimeError: NCCL communicator was
 * aborted}, {@code DistBackendError: NCCL error in: …}, a store-based barrier timing out), such errors printed
 * without their traceback, and gloo's transport errors. Not thread-safe; one instance per file. Other lines are
 * skipped; it never fails on content it does not know.
 */
public final class CollectiveErrorReader {
  /** Messages are cut here: an exception can quote a whole C++ stack. */
  static final int MAX_MESSAGE = 400;
  /** Errors kept per file: every rank of a large job prints the same few. */
  static final int MAX_ERRORS = 64;

  private static final Pattern GLOBAL_RANK = Pattern.compile("\\[rank(\\d{1,7})\\]:");
  /** A group rank as PyTorch's process-group lines print it ({@code [Rank 2]}, {@code [PG 0 Rank 2]}). */
  private static final Pattern GROUP_RANK = Pattern.compile("Rank \\d{1,7}\\]");
  /** A frame in torch.distributed's collective API, not in its launcher ({@code run.py}, elastic). */
  private static final Pattern FRAME = Pattern.compile("File \"[^\"]*torch/distributed/(?:distributed_c10d|c10d_logger"
      + "|_functional_collectives)\\.py\", line \\d+, in (\\w+)");
  private static final Pattern EXCEPTION = Pattern.compile("(?:^|\\]:\\s?|\\s)((?:[A-Za-z_][\\w]*\\.)*"
      + "[A-Z]\\w*(?:Error|Exception|Timeout|Failure)): (.+)");
  /** What c10d and NCCL put in the message of an exception about a collective, traceback or not. */
  private static final Pattern DISTRIBUTED_MESSAGE = Pattern.compile("NCCL communicator was aborted|NCCL error in: "
      + "|DistBackendError|DistNetworkError|DistStoreError|nccl(?:InternalError|SystemError|UnhandledCudaError|"
      + "InvalidUsage|InvalidArgument|RemoteError)|store based barrier|ProcessGroupGloo|ProcessGroupNCCL|c10d");
  private static final Pattern GLOO_CLOSED = Pattern.compile("gloo/transport/\\w+/[\\w.]+:\\d+\\] Connection closed "
      + "by peer \\[?([^\\]\\s]+?)\\]?:\\d+");
  private static final Pattern GLOO_TIMEOUT = Pattern.compile("gloo/transport/\\w+/[\\w.]+:\\d+\\] Timed out "
      + "waiting \\d+ms for (?:recv|send) operation to complete");

  /** py-spy's frame, innermost first: {@code broadcast (torch/distributed/distributed_c10d.py:1555)}. */
  private static final Pattern PYSPY_FRAME = Pattern.compile("^\\s*(\\w+) \\((?:[^()]*/)?torch/distributed/"
      + "distributed_c10d\\.py:\\d+\\)");

  /**
   * A frame's code line calling a collective through torch.distributed or a framework's thin wrapper of it
   * ({@code dist.all_reduce(t, group=g)}), for stacks cut before torch's own frames.
   */
  private static final Pattern CALL_LINE = Pattern.compile("\\b(?:dist|torch\\.distributed|deepspeed\\.comm)\\."
      + "(all_reduce|all_gather\\w*|reduce_scatter\\w*|broadcast\\w*|barrier|reduce|all_to_all\\w*|send|recv|"
      + "gather\\w*|scatter\\w*)\\(");

  private final List<CollectiveError> errors = new ArrayList<>();
  /** The stack being read, until an exception ends it: where it was, in which call. */
  private String stackLine = "";
  private String stackSource = "";
  private final Set<String> seen = new HashSet<>();
  /** The torch.distributed function the current traceback is in; empty outside one. */
  private String call = "";

  /** Whether {@code text} holds a code line calling a collective ({@code dist.all_reduce(…)}). */
  public static boolean callsACollective(String text) {
    return CALL_LINE.matcher(text).find();
  }

  /** Takes the next line; {@code source} names it ("file:line"). */
  public void accept(String line, String source) {
    if (line.contains("Traceback (most recent call last)") || line.contains("Thread ") && line.contains("(active")) {
      waiting();
      return;
    }
    Matcher m;
    if (line.contains("torch/distributed/") && (m = FRAME.matcher(line)).find()) {
      // A traceback lists the innermost frame last.
      call = m.group(1);
      stackLine = line;
      stackSource = source;
      return;
    }
    if (line.contains("(") && (line.contains("dist.") || line.contains("distributed.") || line.contains("comm."))
        && (m = CALL_LINE.matcher(line)).find()) {
      // The code line of a frame that calls a collective; torch's own frames, when the stack has them, follow.
      call = m.group(1);
      stackLine = line;
      stackSource = source;
      return;
    }
    if (line.contains("torch/distributed/") && (m = PYSPY_FRAME.matcher(line)).find()) {
      // py-spy lists it first.
      if (call.isEmpty()) {
        call = m.group(1);
        stackLine = line;
        stackSource = source;
      }
      return;
    }
    if (line.contains("gloo/transport/")) {
      if ((m = GLOO_CLOSED.matcher(line)).find()) {
        add(CollectiveError.Kind.PEER_CLOSED, line, "", m.group(1), source);
      } else if (GLOO_TIMEOUT.matcher(line).find()) {
        add(CollectiveError.Kind.TIMED_OUT, line, "", "", source);
      }
    }
    if (WatchdogLogReader.isCudaFailure(line) && !GLOBAL_RANK.matcher(line).find() && !GROUP_RANK.matcher(line).find()) {
      // A rank's own CUDA failure, named by its [rankN] prefix, is the watchdog reader's; one naming no rank is
      // still a GPU of the job failing.
      add(CollectiveError.Kind.CUDA_FAILED, line, call, "", source);
      call = "";
      return;
    }
    if (line.indexOf(": ") < 0 || !(line.contains("Error") || line.contains("Exception") || line.contains("Timeout")
        || line.contains("Failure"))) {
      return;
    }
    if ((m = EXCEPTION.matcher(line)).find() && (!call.isEmpty() || DISTRIBUTED_MESSAGE.matcher(line).find())) {
      add(CollectiveError.Kind.RAISED, line, call, "", source);
      call = "";
    }
  }

  private void add(CollectiveError.Kind kind, String line, String in, String peer, String source) {
    if (errors.size() >= MAX_ERRORS) {
      return;
    }
    Matcher r = GLOBAL_RANK.matcher(line);
    int rank = r.find() ? Integer.parseInt(r.group(1)) : -1;
    String message = line.strip();
    message = message.length() > MAX_MESSAGE ? message.substring(0, MAX_MESSAGE) : message;
    // Every rank prints the same error: one of each (rank, call, message) is enough.
    if (seen.add(kind + "|" + rank + "|" + in + "|" + message)) {
      errors.add(new CollectiveError(kind, rank, in, message, peer, source));
    }
  }

  /** The errors read, in file order. */
  public List<CollectiveError> finish() {
    waiting();
    return List.copyOf(errors);
  }

  /** A stack that ended in a collective with no exception after it: the rank waits there. */
  private void waiting() {
    if (!call.isEmpty()) {
      add(CollectiveError.Kind.WAITING, stackLine, call, "", stackSource);
    }
    call = "";
  }
}
