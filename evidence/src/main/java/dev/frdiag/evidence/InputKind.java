package dev.frdiag.evidence;

import dev.frdiag.readers.kineto.KinetoTraceReader;
import dev.frdiag.readers.pytorch.CollectiveErrorReader;
import dev.frdiag.readers.pytorch.DistributedLines;
import dev.frdiag.readers.pytorch.StackDumpReader;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

/** What a file given to {@link EvidenceReader} is, decided by its content, never by its name. */
enum InputKind {
  /** A PyTorch Flight Recorder dump written by the C++ pickler (or Python's). */
  PICKLE_DUMP,
  /** A PyTorch Flight Recorder dump in the JSON variant. */
  JSON_DUMP,
  /** An NCCL_DEBUG log (possibly interleaved with anything else). */
  NCCL_LOG,
  /** A training log holding PyTorch ProcessGroupNCCL watchdog lines, or a launcher's report of a dead process. */
  TRAINING_LOG,
  /**
   * A kernel log (dmesg, journal, syslog) holding the NVIDIA driver's Xid lines or the OOM killer's, or what
   * {@code nvidia-smi -q} printed about the node's GPUs.
   */
  KERNEL_LOG,
  /**
   * Where a rank's Python threads were: a stack dump in faulthandler's format (the worker server's
   * {@code dump_traceback}) or py-spy's ({@code pyspy_dump}).
   */
  STACK_DUMP,
  /** A PyTorch profiler (Kineto) trace, {@code .json} or gzip-compressed, one rank's or several merged. */
  PROFILER_TRACE,
  /** None of the above. */
  UNKNOWN;

  /** How much of a text file is sniffed: enough for banners and first warnings, cheap for huge logs. */
  static final int SNIFF_BYTES = 256 * 1024;
  /**
   * What is read first: a dump, a gzip file or binary content shows in its first bytes, so the rest of
   * {@link #SNIFF_BYTES} is read for text only.
   */
  static final int HEAD_BYTES = 8192;

  /** libfabric's log line prefix, {@code libfabric:PID:SECONDS::}. */
  private static final Pattern LIBFABRIC = Pattern.compile("libfabric:\\d+:\\d+::");
  /**
   * The keys a Flight Recorder dump's JSON may begin with. A profiler trace begins with its own ({@code
   * schemaVersion}) and holds a {@code pg_config} only inside its {@code distributedInfo}.
   */
  private static final Set<String> DUMP_FIRST_KEYS = Set.of("version", "comm_lib_version", "nccl_version", "pg_config",
      "pg_status", "entries", "nccl_comm_state");

  /** Tells a file's kind: {@link #of} itself, or, in tests, a wrapper that counts its calls. */
  @FunctionalInterface
  interface Classifier {
    InputKind of(Path file) throws IOException;
  }

  /**
   * Sniffs {@code file}.
   *
   * @throws IOException when it cannot be read
   */
  public static InputKind of(Path file) throws IOException {
    byte[] head;
    try (InputStream in = Files.newInputStream(file)) {
      head = in.readNBytes(HEAD_BYTES);
      if (head.length > 1 && (head[0] & 0xff) == 0x1f && (head[1] & 0xff) == 0x8b) {
        return gzippedTrace(file) ? PROFILER_TRACE : UNKNOWN;
      }
      InputKind kind = fromHead(head);
      if (kind != null) {
        return kind;
      }
      if (head.length == HEAD_BYTES) {
        byte[] rest = in.readNBytes(SNIFF_BYTES - HEAD_BYTES);
        head = Arrays.copyOf(head, HEAD_BYTES + rest.length);
        System.arraycopy(rest, 0, head, HEAD_BYTES, rest.length);
      }
    }
    String text = new String(head, StandardCharsets.UTF_8);
    String trimmed = text.stripLeading();
    // Before the dump test: a trace's distributedInfo holds a "pg_config" too.
    if (KinetoTraceReader.looksLikeTrace(text)) {
      return PROFILER_TRACE;
    }
    if (trimmed.startsWith("{") && (text.contains("\"pg_config\"") || text.contains("\"entries\"")
        || text.contains("\"pg_status\""))) {
      return JSON_DUMP;
    }
    if (StackDumpReader.looksLikeStackDump(text)) {
      return STACK_DUMP;
    }
    // NCCL's own lines, its network plugins' (libfabric, AWS OFI) and its RAS status reports.
    boolean nccl = text.contains(" NCCL INFO ") || text.contains(" NCCL WARN ") || text.contains("NCCL version ")
        || text.contains("=== System : maxBw") || text.contains("NET/OFI") || LIBFABRIC.matcher(text).find()
        || text.contains("Job summary") && text.contains("Communicators...");
    // What PyTorch's distributed layer prints about a rank: watchdog lines, its collective checker, CUDA errors;
    // and what launchers print about a process of the job that died.
    boolean watchdog = text.contains("ProcessGroupNCCL") || text.contains("WorkNCCL(")
        || text.contains("Detected mismatch between collectives") || text.contains("CollectiveFingerPrint(")
        || text.contains("CUDA error: ") || text.contains("illegal memory access was encountered")
        || text.contains("Triton Error [CUDA]")
        || text.contains("CUDA out of memory") || text.contains("ChildFailedError")
        || text.contains(") received by PID") || text.contains("A worker died or was killed");
    // What else a job's processes print about collectives: nccl-tests' output, Python tracebacks through
    // torch.distributed, gloo's transport errors, the elastic launcher's reports.
    watchdog = watchdog || text.contains("# nThread ") || text.contains("# Avg bus bandwidth") || text.contains("(elements)")
        || text.contains("# Out of bounds values") || text.contains("torch/distributed/")
        || text.contains("gloo/transport/") || text.contains("ProcessGroupGloo") || text.contains("DistBackendError")
        || text.contains("NCCL communicator was aborted") || text.contains("NCCL error in: ")
        || text.contains("torch.distributed.elastic") || text.contains("store based barrier")
        || text.contains("but didn't join collective #") || text.contains("joined but didn't finish collective #")
        || text.contains("are the lagging ranks that caused this timeout")
        || text.contains("[missing ranks: ") || text.contains("[ready ranks: ") || text.contains("Missing ranks:")
        || text.lines().anyMatch(DistributedLines::isOne) || CollectiveErrorReader.callsACollective(text)
        // A training script's own progress: steps going on are evidence too.
        || text.contains("step") || text.contains("it/s]") || text.contains("s/it]");
    boolean kernel = text.contains("NVRM: Xid") || text.contains("Killed process") && text.contains("ut of memory")
        || text.contains("NVSMI LOG");
    if (nccl) {
      return NCCL_LOG;
    }
    return watchdog ? TRAINING_LOG : kernel ? KERNEL_LOG : UNKNOWN;
  }

  /**
   * The kind a file's first {@link #HEAD_BYTES} (not gzip) already show: a dump, or nothing readable; null when more
   * of its text is needed.
   */
  private static InputKind fromHead(byte[] head) {
    if (head.length == 0) {
      return UNKNOWN;
    }
    // Pickle protocol 2+ starts with PROTO (0x80) and the version byte.
    if ((head[0] & 0xff) == 0x80 && head.length > 1 && head[1] >= 2 && head[1] <= 5) {
      return PICKLE_DUMP;
    }
    if (binary(head)) {
      return UNKNOWN;
    }
    return jsonDump(head) ? JSON_DUMP : null;
  }

  /**
   * Whether {@code head} is a Flight Recorder dump's JSON by its first key, and one of the keys that make a dump among
   * its first bytes: a dump of many groups need not be read further to be told from a trace.
   */
  private static boolean jsonDump(byte[] head) {
    int i = skipSpace(head, 0);
    if (i >= head.length || head[i] != '{') {
      return false;
    }
    i = skipSpace(head, i + 1);
    if (i >= head.length || head[i] != '"') {
      return false;
    }
    int end = i + 1;
    while (end < head.length && head[end] != '"') {
      end++;
    }
    if (end >= head.length || !DUMP_FIRST_KEYS.contains(new String(head, i + 1, end - i - 1,
        StandardCharsets.ISO_8859_1))) {
      return false;
    }
    String text = new String(head, StandardCharsets.ISO_8859_1);
    return text.contains("\"pg_config\"") || text.contains("\"entries\"") || text.contains("\"pg_status\"");
  }

  private static int skipSpace(byte[] b, int from) {
    int i = from;
    while (i < b.length && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) {
      i++;
    }
    return i;
  }

  /** Whether the files {@code analyze} reads as logs. */
  boolean isLog() {
    return this == NCCL_LOG || this == TRAINING_LOG || this == KERNEL_LOG;
  }

  /** Whether a Flight Recorder dump, in either encoding. */
  boolean isDump() {
    return this == PICKLE_DUMP || this == JSON_DUMP;
  }

  /** Whether a gzip file's first bytes, uncompressed, are a profiler trace's. */
  private static boolean gzippedTrace(Path file) {
    try (InputStream in = new GZIPInputStream(Files.newInputStream(file))) {
      return KinetoTraceReader.looksLikeTrace(new String(in.readNBytes(SNIFF_BYTES), StandardCharsets.UTF_8));
    } catch (IOException e) {
      // Not gzip after all, or cut short before any trace could show: not a trace.
      return false;
    }
  }

  private static boolean binary(byte[] head) {
    int control = 0;
    int n = Math.min(head.length, 8192);
    for (int i = 0; i < n; i++) {
      int b = head[i] & 0xff;
      if (b == 0) {
        return true;
      }
      if (b < 0x09 || b > 0x0d && b < 0x20) {
        control++;
      }
    }
    return control > n / 20;
  }
}
