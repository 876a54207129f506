package dev.frdiag.readers.kineto;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A file that cannot be read as a PyTorch profiler trace. The message names the problem and then the file, e.g.
 * {@code not a profiler trace: no "traceEvents" (/traces/rank3.json)}, to be shown to users as it is.
 */
public final class TraceFormatException extends IOException {
  private static final long serialVersionUID = 1L;

  TraceFormatException(Path file, String problem) {
    super(problem + " (" + file + ")");
  }

  TraceFormatException(Path file, String problem, Throwable cause) {
    super(problem + " (" + file + ")", cause);
  }
}
