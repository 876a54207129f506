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

  private final List<CollectiveError> errors = new ArrayList<>();
  private final Set<String> seen = new HashSet<>();
  /** The torch.distributed function the current traceback is in; empty outside one. */
  private String call = "";

  /** Takes the next line; {@code source} names it ("file:line"). */
  public void accept(String line, String source) {
    if (line.contains("Traceback (most recent call last)")) {
      call = "";
      return;
    }
    Matcher m;
    if (line.contains("torch/distributed/") && (m = FRAME.matcher(line)).find()) {
      call = m.group(1);
      return;
    }
    if (line.contains("gloo/transport/")) {
      if ((m = GLOO_CLOSED.matcher(line)).find()) {
        add(CollectiveError.Kind.PEER_CLOSED, line, "", m.group(1), source);
      } else if (GLOO_TIMEOUT.matcher(line).find()) {
        add(CollectiveError.Kind.TIMED_OUT, line, "", "", source);
      }
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
    return List.copyOf(errors);
  }
}
