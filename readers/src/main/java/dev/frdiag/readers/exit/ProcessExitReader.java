package dev.frdiag.readers.exit;

import dev.frdiag.readers.kernel.SyslogHost;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads process exits from launcher output and kernel logs, one line at a time: torch elastic's failure table
 * ({@code ChildFailedError}: an entry's {@code host}, {@code rank} and {@code exitcode : -9 (pid: N)}), its
 * {@code failed (exitcode: -9) local_rank: 0 (pid: N)} and {@code Signal 9 (SIGKILL) received by PID N} lines, Ray's
 * {@code A worker died or was killed …} report, and the kernel's {@code Out of memory: Killed process N (name)}.
 * A Ray worker whose own lines, anywhere in the file, show PyTorch's watchdog timing out is
 * {@link ProcessExit.Kind#WORKER_ABORTED}: Ray prints the death when it sees it and the worker's lines as they
 * arrive, in either order. Not thread-safe; one instance per file. Other lines are skipped; it never fails on content
 * it does not know.
 */
public final class ProcessExitReader {
  private static final Pattern ENTRY = Pattern.compile("^\\s*\\[\\d+\\]:$");
  private static final Pattern ENTRY_HOST = Pattern.compile("^\\s*host\\s*: (\\S+)");
  private static final Pattern ENTRY_RANK = Pattern.compile("^\\s*rank\\s*: (\\d{1,9})");
  private static final Pattern EXITCODE = Pattern.compile("exitcode\\s*: (-?\\d{1,4}) \\(pid: (\\d{1,10})\\)");
  private static final Pattern FAILED = Pattern.compile(
      "failed \\(exitcode: (-?\\d{1,4})\\) local_rank: \\d+ \\(pid: (\\d{1,10})\\)");
  private static final Pattern SIGNAL =
      Pattern.compile("Signal (\\d{1,3}) \\((SIG\\w+)\\) received by PID (\\d{1,10})");
  private static final Pattern OOM = Pattern.compile("Killed process (\\d{1,10}) \\(([^)]*)\\)");
  private static final Pattern RAY_IP = Pattern.compile("Worker IP address: (\\S+)");
  private static final Pattern RAY_PID = Pattern.compile("Worker PID: (\\d{1,10})");
  private static final Pattern RAY_TYPE = Pattern.compile("Worker exit type: (\\w+)");
  /**
   * Ray's prefix of a worker's own lines: {@code (pid=N)}, {@code (RayWorker pid=N)}, {@code (WorkerDict pid=N,
   * ip=…)}.
   */
  private static final Pattern RAY_WORKER =
      Pattern.compile("\\((?:\\w+ )?pid=(\\d{1,10})(?:, ip=([0-9A-Za-z.:-]{1,64}))?\\)");
  /**
   * What PyTorch's watchdog prints before it takes its process down after a collective timeout
   * ({@code ProcessGroupNCCL.cpp}: the timeout, then "Some NCCL operations have failed or timed out … taking the
   * entire process down").
   */
  private static final Pattern WATCHDOG_TIMEOUT = Pattern.compile(
      "Watchdog caught collective operation timeout|Some NCCL operations have failed or timed out");
  /** A quoted line is cut here: Ray's report runs to a paragraph. */
  private static final int MAX_TEXT = 400;

  private final List<ProcessExit> exits = new ArrayList<>();
  /** Inside an entry of torch elastic's failure table: what it said so far. */
  private boolean inEntry;
  private String entryHost = "";
  private int entryRank = -1;
  private long lastPid = -1;
  /**
   * Ray workers whose own lines show their watchdog timing out, as "pid@ip" and, for a line whose prefix names no
   * address (a worker on the driver's node), "pid@": a pid names one process only on one host.
   */
  private final Set<String> timedOut = new HashSet<>();

  /** Takes the next line; {@code source} names it ("file:line"). */
  public void accept(String line, String source) {
    // Most lines of a log are none of these: cheap checks first, a regular expression only on a likely line.
    if (line.endsWith("]:") && ENTRY.matcher(line).matches()) {
      inEntry = true;
      entryHost = "";
      entryRank = -1;
      return;
    }
    if (inEntry) {
      if (line.startsWith("====") || line.startsWith("----")) {
        inEntry = false;
      } else {
        Matcher h = ENTRY_HOST.matcher(line);
        if (h.find()) {
          entryHost = h.group(1);
          return;
        }
        Matcher r = ENTRY_RANK.matcher(line);
        if (r.find()) {
          entryRank = Integer.parseInt(r.group(1));
          return;
        }
      }
    }
    if (line.contains("exitcode")) {
      Matcher m = EXITCODE.matcher(line);
      if (m.find() || (m = FAILED.matcher(line)).find()) {
        int code = Integer.parseInt(m.group(1));
        if (code < 0) {
          signalled(inEntry ? entryHost : "", Long.parseLong(m.group(2)), inEntry ? entryRank : -1, -code, line,
              source);
        }
        return;
      }
    }
    if (line.contains("received by PID")) {
      Matcher m = SIGNAL.matcher(line);
      if (m.find() && Long.parseLong(m.group(3)) != lastPid) {
        // The failure table repeats its entry's signal in "traceback :"; one exit, not two.
        signalled(inEntry ? entryHost : "", Long.parseLong(m.group(3)), inEntry ? entryRank : -1,
            Integer.parseInt(m.group(1)), line, source);
      }
      return;
    }
    if (line.contains("Killed process") && (line.contains("ut of memory") || line.contains("total-vm"))) {
      Matcher m = OOM.matcher(line);
      if (m.find()) {
        int at = m.start();
        exits.add(new ProcessExit(ProcessExit.Kind.OOM_KILLED, SyslogHost.of(line, at), Long.parseLong(m.group(1)),
            -1, 9, "the kernel's OOM killer killed process " + m.group(1) + " (" + m.group(2) + ")", cut(line),
            source));
      }
      return;
    }
    if (line.contains("pid=") && WATCHDOG_TIMEOUT.matcher(line).find()) {
      Matcher worker = RAY_WORKER.matcher(line);
      if (worker.find()) {
        timedOut.add(worker.group(1) + "@" + (worker.group(2) == null ? "" : worker.group(2)));
      }
      return;
    }
    if (line.contains("A worker died or was killed while executing")) {
      Matcher ip = RAY_IP.matcher(line);
      Matcher pid = RAY_PID.matcher(line);
      Matcher type = RAY_TYPE.matcher(line);
      String exitType = type.find() ? type.group(1) : "";
      if (!exitType.startsWith("INTENDED")) {
        exits.add(new ProcessExit(ProcessExit.Kind.WORKER_DIED, ip.find() ? ip.group(1) : "",
            pid.find() ? Long.parseLong(pid.group(1)) : -1, -1, -1, "Ray reports its worker died or was killed"
                + (exitType.isEmpty() ? "" : " (" + exitType + ")"), cut(line), source));
      }
    }
  }

  /** The exits read so far, in line order. */
  public List<ProcessExit> exits() {
    List<ProcessExit> out = new ArrayList<>(exits.size());
    for (ProcessExit e : exits) {
      out.add(e.kind() == ProcessExit.Kind.WORKER_DIED && e.pid() > 0 && timedOutHere(e)
          ? new ProcessExit(ProcessExit.Kind.WORKER_ABORTED, e.host(), e.pid(), e.rank(), e.signal(),
              "Ray reports its worker died after its own watchdog timed out", e.text(), e.source())
          : e);
    }
    return List.copyOf(out);
  }

  /** Whether the worker that died printed its own timeout: the same pid, on the same address when both name one. */
  private boolean timedOutHere(ProcessExit e) {
    return timedOut.contains(e.pid() + "@") || timedOut.contains(e.pid() + "@" + e.host())
        || e.host().isEmpty() && timedOut.stream().anyMatch(k -> k.startsWith(e.pid() + "@"));
  }

  private void signalled(String host, long pid, int rank, int signal, String line, String source) {
    lastPid = pid;
    exits.add(new ProcessExit(ProcessExit.Kind.SIGNALLED, host, pid, rank, signal, "killed by signal " + signal
        + " (" + ProcessExit.signalName(signal) + ")", cut(line), source));
  }

  private static String cut(String line) {
    String s = line.strip();
    return s.length() > MAX_TEXT ? s.substring(0, MAX_TEXT) + "…" : s;
  }
}
