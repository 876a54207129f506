package dev.frdiag.readers.pytorch;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A file that cannot be read as a PyTorch Flight Recorder dump. The message names the problem and then the file,
 * for example {@code truncated pickle at byte 812 of 1500 (/dumps/_dump_3)}: it is meant to be shown to users as
 * it is.
 */
public final class DumpFormatException extends Exception {
  private static final long serialVersionUID = 1L;

  private final transient Path file;
  private final String problem;

  /**
   * @param file the file (or folder) the problem is about
   * @param problem what is wrong, without the file name
   */
  public DumpFormatException(Path file, String problem) {
    this(file, problem, null);
  }

  public DumpFormatException(Path file, String problem, Throwable cause) {
    super(Objects.requireNonNull(problem, "problem") + " (" + Objects.requireNonNull(file, "file") + ")", cause);
    this.file = file;
    this.problem = problem;
  }

  /** The file (or folder) the problem is about. */
  public Path file() {
    return file;
  }

  /** What is wrong, without the file name. */
  public String problem() {
    return problem;
  }
}
