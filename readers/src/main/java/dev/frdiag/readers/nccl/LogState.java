package dev.frdiag.readers.nccl;

import dev.frdiag.readers.nccl.ProcessState.CommRef;
import dev.frdiag.readers.nccl.ProcessState.OpState;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one parse has learnt so far, fed one line at a time. Not thread-safe; one instance per parse.
 *
 * <p>Owns the per-process state and the communicators' ranks; {@link LinePrefix} lexes each line and this
 * dispatches the message, on its level and first characters, to the sub-parser it belongs to: {@link CollLines},
 * {@link InitLines}, {@link WarnLines} or {@link TopologyDumps}. Lines without an NCCL prefix are checked only for
 * the WARN PyTorch quotes after "Last error:", a network plugin's (libfabric's) completion errors, a pasted
 * topology dump, PyTorch's ProcessGroupNCCL lines and a version banner.
 */
final class LogState {
  private static final String LAST_ERROR = "Last error:";
  private final String source;
  private final int maxEntries;

  private final LinePrefix prefix;
  private final VersionClues clues = new VersionClues();
  private final Events events;
  private final Communicators comms;
  private final TopologyDumps dumps;
  private final CollLines coll = new CollLines();
  private final InitLines init;
  private final WarnLines warns;

  private final Map<ProcKey, ProcessState> procs = new LinkedHashMap<>();
  private final ProcessState[] recentProcs = new ProcessState[16];
  private int recentNext;
  private long droppedProcs;

  private long ncclLines;
  private long recognizedLines;
  private long pytorchLines;
  private long malformedLines;
  private long setupLines;
  private long troubleLines;
  /** What came before "Last error:" on its line: a launcher's tag, repeated on the quoted line. */
  private String lastErrorTag = "";
  /** Set by a line ending in "Last error:": the next non-empty line is the WARN it quotes. */
  private boolean lastErrorNext;

  LogState(String source, int maxEventsPerKind, int maxEntries) {
    this.source = source;
    this.maxEntries = maxEntries;
    this.prefix = new LinePrefix(maxEntries);
    this.events = new Events(prefix, maxEventsPerKind);
    this.comms = new Communicators(maxEntries);
    this.dumps = new TopologyDumps(clues, maxEntries);
    this.init = new InitLines(prefix, clues, comms, events, maxEntries);
    this.warns = new WarnLines(prefix, clues, events);
  }

  /** Lines taken so far. */
  long lineNumber() {
    return prefix.lineNumber();
  }

  /** Lines taken so far that NCCL or PyTorch's ProcessGroupNCCL wrote, or that belong to a topology dump. */
  long recognizedLines() {
    return recognizedLines;
  }

  /**
   * Takes the next line, without its line terminator. {@code latin1} says the line was decoded byte for byte from
   * ISO-8859-1 (fast, exact for the ASCII NCCL prints) and must be re-decoded as UTF-8 when quoted.
   */
  void accept(String s, boolean latin1) {
    try {
      if (prefix.next(s, latin1)) {
        prefixed(s);
      } else {
        bare(s);
      }
    } catch (RuntimeException e) {
      // A line that looks like NCCL's but holds absurd values (numbers out of range…) must not end the parse.
      malformedLines++;
    }
  }

  private void prefixed(String s) {
    // A prefixed line is NCCL's own: a "Last error:" with nothing after it quoted nothing.
    lastErrorNext = false;
    if (prefix.timestamp() != null) {
      clues.atLeast(26, "a timestamp before the line prefix", prefix.lineNumber());
    } else if (prefix.level() == LinePrefix.Level.WARN) {
      clues.atMost(25, "WARN lines without a timestamp (timestamped by default from 2.26)", prefix.lineNumber());
    }
    if (prefix.noiseEnd() > 0) {
      ProcessState p = proc();
      if (p.launcherRank < 0) {
        p.launcherRank = prefix.launcherRank();
      }
    }
    ncclLines++;
    recognizedLines++;
    if (prefix.level() == LinePrefix.Level.CALL) {
      // host:pid:tid NCCL CALL ncclSend(...): API calls are only counted.
      return;
    }
    ProcessState p = proc();
    p.lines++;
    if (prefix.level() == LinePrefix.Level.WARN) {
      troubleLines++;
      warns.warn(s, prefix.messageStart());
    } else {
      info(s, prefix.messageStart(), p);
    }
  }

  private void info(String s, int ms, ProcessState p) {
    if (p.topology != null && dumps.continued(p, s, ms, prefix.tid())) {
      return;
    }
    if (s.endsWith("Init COMPLETE") || s.endsWith("Destroy COMPLETE") || s.startsWith("Connected all ", ms)) {
      setupLines++;
    }
    if (ms >= s.length()) {
      return;
    }
    char c = s.charAt(ms);
    if (c >= 'A' && c <= 'Z') {
      int colon = CollLines.opCountColon(s, ms);
      if (colon > 0) {
        coll.accept(s, ms, colon, p, prefix.lineNumber());
        return;
      }
    }
    if (c == '=') {
      if (TopologyDumps.isHeader(s, ms)) {
        dumps.start(p, s, ms, prefix.tid(), prefix.lineNumber());
      }
    } else if (c == '[') {
      warns.serviceThread(s, ms);
    } else if (!init.accept(s, ms, p) && c >= 'a' && c <= 'z') {
      warns.propagation(s, ms);
    }
  }

  private void bare(String s) {
    if (trouble(s)) {
      troubleLines++;
    }
    // A quote that ends a ProcessGroupNCCL message is counted below, where that message's version is read.
    if (lastError(s) && !s.contains("ProcessGroupNCCL")) {
      recognizedLines++;
      return;
    }
    int lf = s.indexOf("libfabric:");
    if (lf >= 0 && warns.libfabric(s, lf)) {
      recognizedLines++;
      return;
    }
    if (dumps.continuedPasted(s)) {
      recognizedLines++;
      return;
    }
    int k = s.indexOf("NCCL");
    if (k < 0) {
      // A dump pasted without its "host:pid:tid [dev] NCCL INFO " prefixes.
      if (dumps.startPasted(s, prefix.lineNumber())) {
        recognizedLines++;
      }
      return;
    }
    for (; k >= 0; k = s.indexOf("NCCL", k + 4)) {
      if (k >= 12 && s.startsWith("ProcessGroupNCCL", k - 12)) {
        pytorchLines++;
        recognizedLines++;
        // PyTorch names the NCCL it loaded: "ProcessGroupNCCL environments: NCCL version: 2.21.5, …" and
        // "NCCL error: …, NCCL version 2.20.5".
        int v = s.indexOf("NCCL version", k);
        if (v >= 0) {
          int from = v + 12;
          while (from < s.length() && (s.charAt(from) == ':' || s.charAt(from) == ' ')) {
            from++;
          }
          clues.banner(s, from, "PyTorch's ProcessGroupNCCL message at line ", prefix.lineNumber());
        }
        return;
      }
      if (s.startsWith("NCCL version ", k) && k + 13 < s.length() && Ascii.isDigit(s.charAt(k + 13))) {
        clues.banner(s, k + 13, "banner at line ", prefix.lineNumber());
        recognizedLines++;
        return;
      }
    }
  }

  /**
   * Reads the WARN that PyTorch quotes after {@code Last error:}, on the same line or the next non-empty one, as
   * the WARN line it is. ProcessGroupNCCL ends its NCCL errors with "Last error:\n" and {@code ncclGetLastError}
   * (torch/csrc/distributed/c10d/NCCLUtils.cpp, {@code getNcclErrorDetailStr}), which is the message of the last
   * WARN NCCL printed (src/debug.cc), without its prefix: the only trace of NCCL's error when NCCL_DEBUG was off.
   * The line has no prefix, so the event names no host, process or device.
   *
   * @return whether the line held such a WARN
   */
  private boolean lastError(String s) {
    int from;
    if (lastErrorNext) {
      if (s.isBlank()) {
        return false;
      }
      lastErrorNext = false;
      // Whatever a launcher put before "Last error:" (a "[rank1]: " tag) it puts before the quoted line too.
      from = skipSpaces(s, s.startsWith(lastErrorTag) ? lastErrorTag.length() : 0);
      prefix.quoteFrom(from);
    } else {
      int k = s.indexOf(LAST_ERROR);
      if (k < 0) {
        return false;
      }
      from = skipSpaces(s, k + LAST_ERROR.length());
      if (from == s.length()) {
        lastErrorNext = true;
        lastErrorTag = s.substring(0, k);
        return false;
      }
      prefix.quoteFrom(k);
    }
    warns.warn(s, from);
    return true;
  }

  private static int skipSpaces(String s, int from) {
    while (from < s.length() && Character.isWhitespace(s.charAt(from))) {
      from++;
    }
    return from;
  }

  /**
   * Whether a line that is not NCCL's own may report a failure: PyTorch's errors, tracebacks, timeouts. Only such
   * lines are checked (NCCL's INFO lines, the bulk of a large log, are not), so this stays off the hot path.
   */
  private static boolean trouble(String s) {
    return s.contains("rror") || s.contains("xception") || s.contains("raceback") || s.contains("imeout")
        || s.contains("timed out") || s.contains("ailed") || s.contains("bort") || s.contains("ismatch")
        || s.contains("[E") || s.contains("WARN");
  }

  private ProcessState proc() {
    String host = prefix.host();
    int pid = prefix.pid();
    // Interleaved processes defeat a one-entry cache; hosts are interned, so a few identity checks do.
    for (ProcessState p : recentProcs) {
      if (p != null && p.pid == pid && p.host == host) {
        return p;
      }
    }
    ProcKey key = new ProcKey(host, pid);
    ProcessState p = procs.get(key);
    if (p == null) {
      p = new ProcessState(host, pid);
      if (procs.size() < maxEntries) {
        procs.put(key, p);
      } else {
        droppedProcs++;
      }
    }
    recentProcs[recentNext++ & (recentProcs.length - 1)] = p;
    return p;
  }

  NcclLog finish(long bytes, boolean truncatedLastLine) {
    List<NcclTopology> topologies = dumps.finish(procs.values());
    List<NcclProcess> processes = new ArrayList<>();
    List<OpCountProgress> opCounts = new ArrayList<>();
    for (ProcessState p : procs.values()) {
      processes.add(p.toProcess());
      for (OpState o : p.ops) {
        CommRef ref = p.comms.get(o.commPtr);
        opCounts.add(new OpCountProgress(ref == null ? "" : ref.commId(), o.commPtr, p.host, p.pid,
            ref == null ? -1 : ref.rank(), o.nranks, o.lastOpCount, o.op, o.calls, o.lastLine, o.recentCalls()));
      }
    }
    boolean capped = droppedProcs + coll.dropped() + init.dropped() + comms.dropped() > 0 || events.capped();
    return new NcclLog(source, prefix.lineNumber(), bytes, ncclLines, pytorchLines, malformedLines,
        truncatedLastLine, clues.version(), processes, init.nics(), init.noIbDevice(), comms.communicators(),
        comms.looseRanks(procs.values()), init.transports(), init.rings(), init.trees(), init.summaries(),
        init.nvls(), init.collNet(), topologies, init.gdrDecisions(), opCounts, events.inLineOrder(),
        events.counts(), capped, setupLines, troubleLines);
  }

  /** A process's identity. */
  private record ProcKey(String host, int pid) {}
}
