package dev.frdiag.readers.exit;

import java.util.Objects;
import java.util.Set;

/**
 * A process of the job that ended abnormally, as a launcher or the kernel reports it.
 *
 * @param kind how it ended
 * @param host the host the report names; empty when it names none
 * @param pid the process; -1 when the report names none
 * @param rank its global rank (torch elastic's failure table); -1 when the report names none
 * @param signal the signal that ended it (exit code -N), -1 when none or unknown
 * @param detail what the report says in a few words, e.g. "killed by signal 9 (SIGKILL)"
 * @param text the line it was read from, as printed
 * @param source file name and line number, e.g. "train.log:812"
 */
public record ProcessExit(Kind kind, String host, long pid, int rank, int signal, String detail, String text,
    String source) {
  /**
   * Signals that come from outside the process or from a crash: SIGKILL (the kernel's OOM killer, a scheduler,
   * an operator), SIGSEGV, SIGBUS, SIGILL, SIGFPE. Not SIGABRT: PyTorch takes its own process down with it after
   * an NCCL error or a collective timeout, so it follows a hang rather than starting one. Not SIGTERM, SIGINT or
   * SIGHUP: a launcher or scheduler ending processes after something else failed.
   */
  static final Set<Integer> FROM_OUTSIDE = Set.of(4, 7, 8, 9, 11);

  /** How a process ended. */
  public enum Kind {
    /** Ended by a signal, as torch elastic reports it (exit code -N, "Signal N (SIGX) received by PID"). */
    SIGNALLED,
    /** Killed by the kernel's OOM killer ("Out of memory: Killed process N (name)"). */
    OOM_KILLED,
    /** Ray reports that a worker died or was killed by an unexpected system error. */
    WORKER_DIED,
    /**
     * Ray reports a worker dead whose own lines (Ray's {@code (… pid=N)} prefix) show PyTorch's watchdog timing out
     * first: the abort PyTorch takes after a collective timeout, which follows the hang.
     */
    WORKER_ABORTED
  }

  public ProcessExit {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(detail, "detail");
    Objects.requireNonNull(text, "text");
    Objects.requireNonNull(source, "source");
  }

  /**
   * Whether the process died from outside or crashed, which starts a hang: the OOM killer, a dead Ray worker, or
   * one of {@link #FROM_OUTSIDE}'s signals. Other exits (SIGABRT, SIGTERM, a Ray worker aborted after its own
   * timeout) follow a failure rather than cause it.
   */
  public boolean fromOutside() {
    return switch (kind) {
      case OOM_KILLED, WORKER_DIED -> true;
      case SIGNALLED -> FROM_OUTSIDE.contains(signal);
      case WORKER_ABORTED -> false;
    };
  }

  /** The conventional name of a signal number: "SIGKILL", or "signal 42". */
  static String signalName(int signal) {
    return switch (signal) {
      case 1 -> "SIGHUP";
      case 2 -> "SIGINT";
      case 4 -> "SIGILL";
      case 6 -> "SIGABRT";
      case 7 -> "SIGBUS";
      case 8 -> "SIGFPE";
      case 9 -> "SIGKILL";
      case 11 -> "SIGSEGV";
      case 15 -> "SIGTERM";
      default -> "signal " + signal;
    };
  }
}
