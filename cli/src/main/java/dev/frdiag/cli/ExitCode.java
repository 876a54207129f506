package dev.frdiag.cli;

import dev.frdiag.command.CommandRunner;

/** The documented exit codes of {@code fr-diagnose} and {@code fr-demo}. */
public final class ExitCode {
  /** No hang: every process group is making progress. */
  public static final int NO_HANG = 0;
  /** A hang was diagnosed (the report names the culprit). */
  public static final int HANG = 1;
  /** The command line was wrong. */
  public static final int USAGE = CommandRunner.USAGE;
  /** The daemon could not be reached, or the job or report is unknown to it. */
  public static final int UNREACHABLE_OR_UNKNOWN = 3;
  /** A hang may exist but the evidence does not support a verdict. */
  public static final int INSUFFICIENT_EVIDENCE = 4;
  /** Anything else went wrong (the message says what). */
  public static final int FAILURE = 5;
  /** The JVM ran out of memory; FRDIAG_JAVA_OPTS=-Xmx… gives it more. */
  public static final int OUT_OF_MEMORY = 6;
  /** Not hung but slowed: a straggler was named (the report says which rank). */
  public static final int SLOW = 7;

  private ExitCode() {}

  /** The exit code that matches a report's verdict. */
  public static int of(dev.frdiag.proto.v1.Verdict verdict) {
    return switch (verdict) {
      case HANG -> HANG;
      case NO_HANG -> NO_HANG;
      case INSUFFICIENT_EVIDENCE -> INSUFFICIENT_EVIDENCE;
      case SLOW -> SLOW;
      default -> FAILURE;
    };
  }
}
