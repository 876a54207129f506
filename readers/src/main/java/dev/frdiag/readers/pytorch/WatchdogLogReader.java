package dev.frdiag.readers.pytorch;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads PyTorch ProcessGroupNCCL watchdog lines from training logs, in every prefix form PyTorch has printed:
 * global {@code [rankN]:} glog prefixes, group {@code [Rank N]}, {@code [PG x Rank r]},
 * {@code [PG x (desc) Rank r]} and {@code [PG ID x PG GUID y(desc) Rank r]}, with any leading noise (log-viewer
 * line numbers, launcher tags). Other lines are skipped; the reader never fails on content it does not know.
 */
public final class WatchdogLogReader {
  /** Lines longer than this are cut before matching: a glued progress bar must not cost a regex pass per MB. */
  static final int MAX_LINE = 8192;
  /** Lines a wrapped checker message is read across, at most: one per rank's fingerprint and its parts. */
  static final int MAX_JOINED = 12;

  private static final Pattern GLOBAL_RANK = Pattern.compile("\\[rank(\\d+)\\]:");
  private static final Pattern GROUP = Pattern.compile(
      "\\[(?:PG ID \\d+ PG GUID ([^\\s(\\]]*)(?:\\(([^)]*)\\))?|PG (?!ID )([^\\s(\\]]+)(?: \\(([^)]*)\\))?) +Rank (\\d+)\\]");
  private static final Pattern PLAIN_GROUP_RANK = Pattern.compile("\\[Rank (\\d+)\\]");
  /**
   * The work a timeout names, in every form PyTorch printed: {@code WorkNCCL(OpType=…, TensorShape=[…],
   * Timeout(ms)=…)} (1.8-1.9, no sequence number), {@code WorkNCCL(SeqNum=…, OpType=…, Timeout(ms)=…)} (1.10-2.1)
   * and {@code WorkNCCL(SeqNum=…, OpType=…, NumelIn=…, NumelOut=…, Timeout(ms)=…)} (2.2 on).
   */
  private static final Pattern WORK = Pattern.compile("WorkNCCL\\((?:SeqNum=(\\d+), )?OpType=(\\w+)"
      + "(?:, TensorShape=\\[([0-9, ]*)\\])?(?:, NumelIn=(\\d+), NumelOut=(\\d+))?(?:, Timeout\\(ms\\)=(\\d+))?");
  private static final Pattern STATUS_NEW = Pattern.compile("failure detected by watchdog at work sequence id: "
      + "(\\d+) PG status: last enqueued work: (-?\\d+), last completed work: (-?\\d+)");
  private static final Pattern STATUS_OLD = Pattern.compile("(?:detected by watchdog at work|Timeout at NCCL work)"
      + ": (\\d+), last enqueued NCCL work: (-?\\d+), last completed NCCL work: (-?\\d+)");
  private static final Pattern DUMP = Pattern.compile("Received a dump signal (?:due to a collective timeout )?"
      + "from (this local rank|\\s*rank (\\d+))");
  private static final Pattern DUMP_PROGRESS = Pattern.compile(
      "Last enqueued NCCL work: (-?\\d+), last completed NCCL work: (-?\\d+)");
  private static final Pattern STUCK = Pattern.compile("watchdog got stuck for (\\d+) seconds");
  /**
   * One rank's collective in a checker mismatch line, in every form PyTorch printed: 1.10's "Rank 1 is running
   * inconsistent collective: CollectiveFingerPrint(OpType=…)" (the printing rank's own only), 1.11-1.12's "Rank 0
   * is running collective: CollectiveFingerPrint(OpType=…, TensorShape=…), but Rank 1 is running collective:
   * REDUCE" (the second by its op alone), and the sequence-numbered form of 1.13 on, whose comma before OpType
   * some builds leave out.
   */
  private static final Pattern FINGERPRINT = Pattern.compile("Rank (\\d{1,9}) is running (inconsistent )?"
      + "collective: ?(?:CollectiveFingerPrint\\((?:SequenceNumber=(\\d{1,18}),? ?)?OpType=(\\w+)"
      + "(?:, TensorShape=\\[([0-9, ]*)\\])?|([A-Z][A-Z_]{2,40})\\b)");
  /** ProcessGroupWrapper's own line as it enters the check of a collective (TORCH_DISTRIBUTED_DEBUG=DETAIL). */
  private static final Pattern CHECKER_RUNNING = Pattern.compile("Running collective: CollectiveFingerPrint\\("
      + "SequenceNumber=(\\d{1,18}), OpType=(\\w+)(?:, TensorShape=\\[([0-9, ]*)\\])?");
  private static final Pattern RAN_FOR = Pattern.compile("ran for (\\d{1,18}) milliseconds");
  /**
   * How late past its timeout a timeout may be noticed before the watchdog counts as not having run: it checks its
   * work every few hundred milliseconds, and PyTorch's heartbeat monitor ends a process whose watchdog is stuck
   * for 8 minutes by default, so a timeout seen 10 minutes late was seen by a watchdog that had stopped.
   */
  static final long LATE_MS = 10 * 60 * 1000;

  private WatchdogLogReader() {}

  /**
   * Every watchdog line of a log file, in file order. Undecodable bytes are replaced, not fatal.
   *
   * @throws IOException when the file cannot be read
   */
  public static List<WatchdogLine> read(Path file) throws IOException {
    var decoder = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
        .onUnmappableCharacter(CodingErrorAction.REPLACE);
    try (Reader in = new java.io.InputStreamReader(Files.newInputStream(file), decoder)) {
      return read(in, file.getFileName().toString());
    }
  }

  /** Every watchdog line read from {@code in}; {@code name} labels sources ("name:line"). */
  static List<WatchdogLine> read(Reader in, String name) throws IOException {
    List<WatchdogLine> out = new ArrayList<>();
    BufferedReader lines = new BufferedReader(in);
    String next = lines.readLine();
    int number = 0;
    while (next != null) {
      String line = next;
      next = lines.readLine();
      number++;
      String text = cut(line);
      if (text.contains("Detected mismatch between collectives")) {
        int first = number;
        for (int joined = 0; next != null && joined < MAX_JOINED && mismatchContinues(text); joined++) {
          text = cut(text + (text.endsWith(" ") ? "" : " ") + next.strip());
          next = lines.readLine();
          number++;
        }
        out.addAll(fingerprints(text, name + ":" + first));
        continue;
      }
      WatchdogLine parsed = text.contains("Running collective: CollectiveFingerPrint")
          ? checkerRunning(text, name + ":" + number) : parse(text, name + ":" + number, false);
      if (parsed == null && next != null && text.contains("ProcessGroupNCCL") && !next.startsWith("[")) {
        // A line pasted from a terminal is often hard-wrapped, even inside a word ("ProcessGroupNCCL'" / "s
        // watchdog got stuck", "NumelIn=112, Numel" / "Out=112"): a PyTorch line that says nothing alone, or
        // whose work is cut short, is read again with the next one.
        parsed = parse(cut(line + next), name + ":" + number, false);
        if (parsed != null) {
          next = lines.readLine();
          number++;
        }
      }
      if (parsed == null && !text.contains("Running collective: CollectiveFingerPrint")) {
        // Cut short and not continued: what it does say is still read.
        parsed = parse(text, name + ":" + number, true);
      }
      if (parsed != null) {
        out.add(parsed);
      }
    }
    return out;
  }

  private static String cut(String line) {
    return line.length() > MAX_LINE ? line.substring(0, MAX_LINE) : line;
  }


  /** The watchdog line {@code text} is, or null when it is not one; a work cut short is read for what it says. */
  public static WatchdogLine parse(String text, String source) {
    return parse(text, source, true);
  }

  /**
   * The watchdog line {@code text} is, or null when it is not one; also null, unless {@code cutShort} is allowed,
   * when its {@code WorkNCCL(…)} does not close (the line was wrapped).
   */
  private static WatchdogLine parse(String text, String source, boolean cutShort) {
    // Cheap rejections first: most lines of a training log are not from the watchdog.
    boolean work = text.contains("WorkNCCL(");
    boolean status = text.contains("watchdog at work") || text.contains("Timeout at NCCL work");
    boolean dump = text.contains("Received a dump signal");
    boolean stuck = text.contains("watchdog got stuck");
    // ProcessGroupNCCL's heartbeat monitor says this when the watchdog thread stopped beating (2.3 and later).
    boolean heartbeat = text.contains("Heartbeat monitor timed out");
    boolean cuda = isCudaFailure(text);
    if (!work && !status && !dump && !stuck && !heartbeat && !cuda) {
      return null;
    }
    int globalRank = intGroup(GLOBAL_RANK.matcher(text), 1);
    int groupRank = -1;
    String pgName = "";
    String pgDesc = "";
    Matcher g = GROUP.matcher(text);
    if (g.find()) {
      pgName = g.group(1) != null ? g.group(1) : g.group(3);
      pgDesc = g.group(2) != null ? g.group(2) : g.group(4) != null ? g.group(4) : "";
      groupRank = Integer.parseInt(g.group(5));
    } else {
      groupRank = intGroup(PLAIN_GROUP_RANK.matcher(text), 1);
    }
    Matcher m;
    if (status && ((m = STATUS_NEW.matcher(text)).find() || (m = STATUS_OLD.matcher(text)).find())) {
      return new WatchdogLine(WatchdogLine.Kind.PG_STATUS, globalRank, groupRank, pgName, pgDesc,
          Long.parseLong(m.group(1)), "", -1, -1, -1, Long.parseLong(m.group(2)), Long.parseLong(m.group(3)), -1,
          -1, source, text);
    }
    if (work && text.contains("Watchdog caught collective operation timeout") && (m = WORK.matcher(text)).find()
        && (cutShort || text.startsWith(")", m.end()))) {
      long timeoutMs = longOr(m.group(6));
      Matcher ran = RAN_FOR.matcher(text);
      long late = timeoutMs >= 0 && ran.find() ? Long.parseLong(ran.group(1)) - timeoutMs : -1;
      long numelIn = m.group(4) != null ? longOr(m.group(4)) : numel(m.group(3));
      return new WatchdogLine(WatchdogLine.Kind.TIMEOUT, globalRank, groupRank, pgName, pgDesc,
          m.group(1) == null ? -1 : Long.parseLong(m.group(1)), m.group(2), numelIn, longOr(m.group(5)), timeoutMs,
          -1, -1, -1, late >= LATE_MS ? late / 1000 : -1, source, text);
    }
    if (dump && (m = DUMP.matcher(text)).find()) {
      int from = m.group(2) == null ? -1 : Integer.parseInt(m.group(2));
      Matcher p = DUMP_PROGRESS.matcher(text);
      boolean progress = p.find();
      return new WatchdogLine(WatchdogLine.Kind.DUMP_SIGNAL, globalRank, groupRank, pgName, pgDesc, -1, "", -1, -1,
          -1, progress ? Long.parseLong(p.group(1)) : -1, progress ? Long.parseLong(p.group(2)) : -1, from, -1,
          source, text);
    }
    if (stuck && (m = STUCK.matcher(text)).find()) {
      return new WatchdogLine(WatchdogLine.Kind.WATCHDOG_STUCK, globalRank, groupRank, pgName, pgDesc, -1, "", -1,
          -1, -1, -1, -1, -1, Long.parseLong(m.group(1)), source, text);
    }
    // A CUDA error says whose device failed only when the line names the rank; an unattributed one is no fact.
    if (cuda && (globalRank >= 0 || groupRank >= 0)) {
      return new WatchdogLine(WatchdogLine.Kind.CUDA_ERROR, globalRank, groupRank, pgName, pgDesc, -1, "", -1, -1, -1,
          -1, -1, -1, -1, source, text);
    }
    if (heartbeat) {
      return new WatchdogLine(WatchdogLine.Kind.WATCHDOG_STUCK, globalRank, groupRank, pgName, pgDesc, -1, "", -1,
          -1, -1, -1, -1, -1, -1, source, text);
    }
    return null;
  }

  /**
   * Whether {@code text} reports a CUDA failure of the process's own device: PyTorch's {@code CUDA error: …} and
   * out-of-memory errors, and the same faults as Triton and the driver word them.
   */
  public static boolean isCudaFailure(String text) {
    return text.contains("CUDA error: ") || text.contains("CUDA out of memory")
        || text.contains("illegal memory access was encountered") || text.contains("Triton Error [CUDA]")
        || text.contains("unspecified launch failure");
  }

  /**
   * Each rank's collective a collective-checker mismatch line names, as a RUNNING line about that rank. The ranks
   * a line names were checked at one collective, so where the line prints no sequence number they share seq 0 of
   * an unnamed group. A line naming one rank only (1.10's "inconsistent collective") is a MISMATCH_REPORTED line:
   * the checker saw a difference it does not show.
   */
  static List<WatchdogLine> fingerprints(String text, String source) {
    List<WatchdogLine> out = new ArrayList<>();
    Matcher m = FINGERPRINT.matcher(text);
    int globalRank = intGroup(GLOBAL_RANK.matcher(text), 1);
    while (m.find()) {
      int rank = Integer.parseInt(m.group(1));
      long seq = m.group(3) == null ? 0 : Long.parseLong(m.group(3));
      String op = m.group(4) != null ? m.group(4) : m.group(6);
      boolean alone = m.group(2) != null;
      out.add(new WatchdogLine(alone ? WatchdogLine.Kind.MISMATCH_REPORTED : WatchdogLine.Kind.RUNNING,
          alone ? globalRank : -1, rank, "", "", seq, op, numel(m.group(5)), -1, -1, -1, -1, -1, -1, source, text));
    }
    return out;
  }

  /**
   * Whether a checker mismatch message goes on past {@code text}: PyTorch breaks it over lines in some versions
   * ("Rank 0 is running collective:" / "CollectiveFingerPrint(…),"), and terminals wrap it; it is whole when its
   * parentheses close after the last rank's collective.
   */
  private static boolean mismatchContinues(String text) {
    int open = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      open += c == '(' ? 1 : c == ')' ? -1 : 0;
    }
    String end = text.stripTrailing();
    return open > 0 || end.endsWith("collective:") || end.endsWith(",") || end.endsWith("but");
  }

  /** The collective checker's line about the rank that prints it, or null when it names no rank. */
  static WatchdogLine checkerRunning(String text, String source) {
    Matcher m = CHECKER_RUNNING.matcher(text);
    int globalRank = intGroup(GLOBAL_RANK.matcher(text), 1);
    int groupRank = intGroup(PLAIN_GROUP_RANK.matcher(text), 1);
    if (!m.find() || globalRank < 0 && groupRank < 0) {
      return null;
    }
    return new WatchdogLine(WatchdogLine.Kind.RUNNING, globalRank, groupRank, "", "", Long.parseLong(m.group(1)),
        m.group(2), numel(m.group(3)), -1, -1, -1, -1, -1, -1, source, text);
  }

  /** Elements of one tensor shape printed as "2, 3"; -1 when there is none or it does not fit. */
  private static long numel(String dims) {
    if (dims == null || dims.isBlank()) {
      return -1;
    }
    long n = 1;
    for (String d : dims.split(",")) {
      long v = longOr(d.trim());
      if (v < 0) {
        return -1;
      }
      try {
        n = Math.multiplyExact(n, v);
      } catch (ArithmeticException e) {
        return -1;
      }
    }
    return n;
  }

  private static int intGroup(Matcher m, int group) {
    return m.find() ? Integer.parseInt(m.group(group)) : -1;
  }

  /**
   * A printed count, or -1 when absent or out of range: PyTorch prints coalesced work's NumelIn as
   * 18446744073709551615 (size_t -1), and a digit run too long for 64 bits is no count either.
   */
  private static long longOr(String s) {
    if (s == null || s.length() > 20) {
      return -1;
    }
    try {
      long v = Long.parseUnsignedLong(s);
      return v < 0 ? -1 : v;
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
