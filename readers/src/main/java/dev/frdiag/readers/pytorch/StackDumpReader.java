package dev.frdiag.readers.pytorch;

import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ThreadStack;
import dev.frdiag.proto.v1.ThreadStacks;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads where a rank's Python threads are from a stack dump in either format PyTorch's worker server answers with:
 * faulthandler's ({@code dump_traceback}: {@code Thread 0x… (most recent call first):}, then
 * {@code   File "…", line N in func}) and py-spy's {@code dump} ({@code pyspy_dump}: {@code Process N: …}, then
 * {@code Thread N (idle): "name"} and {@code     func (file:line)}). Frames are interned: every rank of a job repeats
 * the same ones.
 */
public final class StackDumpReader {
  /** faulthandler's thread header; "Stack" is its header when it dumps the current thread only. */
  private static final Pattern FAULTHANDLER_THREAD = Pattern.compile(
      "^(?:(?:Current thread|Thread) (0x[0-9a-fA-F]+)|Stack)\\b.*\\(most recent call first\\):\\s*$");
  private static final Pattern FAULTHANDLER_FRAME = Pattern.compile("^\\s+File \"(.*)\", line (\\d+) in (.*)$");
  private static final Pattern PYSPY_PROCESS = Pattern.compile("^Process \\d+: ");
  private static final Pattern PYSPY_THREAD = Pattern.compile(
      "^Thread (0x[0-9a-fA-F]+|\\d+) \\(([a-z+]+)\\)(?:: \"(.*)\")?\\s*$");
  /** "    func (file:line)", or a native frame "    func (lib.so)"; the file part holds no parenthesis. */
  private static final Pattern PYSPY_FRAME = Pattern.compile("^ {4}(\\S.*) \\(([^()]*?)(?::(\\d+))?\\)\\s*$");
  private static final Pattern LAST_NUMBER = Pattern.compile("(\\d{1,9})(?!.*\\d)");
  /** Shown when a text is not a stack dump: enough of it to recognise, e.g. "sh: 1: py-spy: not found". */
  private static final int QUOTED = 80;

  private final Map<Frame, Frame> frames = new HashMap<>();

  private StackDumpReader() {}

  /** A reader; it interns frames across the dumps it reads. Not thread-safe. */
  public static StackDumpReader create() {
    return new StackDumpReader();
  }

  /**
   * Reads the stack dump in {@code file}; its source is the file name.
   *
   * @throws NotAStackDumpException when the file is neither format
   * @throws IOException when it cannot be read
   */
  public ThreadStacks read(Path file) throws IOException {
    String text = Files.readString(file, StandardCharsets.UTF_8);
    return parse(text, String.valueOf(file.getFileName()));
  }

  /**
   * Reads a stack dump's text.
   *
   * @param source what produced it ("dump_traceback", "pyspy_dump", a file name): the result's source
   * @throws NotAStackDumpException when the text is neither format
   */
  public ThreadStacks parse(String text, String source) throws NotAStackDumpException {
    Objects.requireNonNull(text, "text");
    Objects.requireNonNull(source, "source");
    return switch (formatOf(text)) {
      case FAULTHANDLER -> threads(text, source, FAULTHANDLER_THREAD, StackDumpReader::faulthandlerThread,
          FAULTHANDLER_FRAME, f -> frame(f.group(3), f.group(1), f.group(2)));
      case PYSPY -> threads(text, source, PYSPY_THREAD, StackDumpReader::pyspyThread, PYSPY_FRAME,
          f -> frame(f.group(1), f.group(2), f.group(3)));
      case NONE -> throw new NotAStackDumpException(source, "looked for faulthandler's 'Thread 0x… (most recent "
          + "call first):' or py-spy's 'Process N:' and 'Thread N (idle|active)' lines, found " + quote(text));
    };
  }

  /** Whether {@code head}, the start of a text, is a stack dump in either format. */
  public static boolean looksLikeStackDump(String head) {
    return formatOf(head) != Format.NONE;
  }

  /**
   * The rank a stack file's name gives: its last number ({@code dump_traceback_rank_2.txt}, {@code stacks_2.txt},
   * {@code py-spy-rank2.txt}); empty when the name holds none.
   */
  public static OptionalInt rankFromFileName(String fileName) {
    Matcher m = LAST_NUMBER.matcher(Objects.requireNonNull(fileName, "fileName"));
    return m.find() ? OptionalInt.of(Integer.parseInt(m.group(1))) : OptionalInt.empty();
  }

  private enum Format { FAULTHANDLER, PYSPY, NONE }

  /**
   * The format a text is in, from how it starts: a dump begins with its first thread (faulthandler) or its process
   * line (py-spy). A training log that holds a faulthandler traceback after a crash is a log, not a stack dump.
   */
  private static Format formatOf(String text) {
    List<String> head = text.lines().dropWhile(String::isBlank).limit(200).toList();
    if (head.isEmpty()) {
      return Format.NONE;
    }
    if (FAULTHANDLER_THREAD.matcher(head.get(0)).matches()) {
      return Format.FAULTHANDLER;
    }
    if (PYSPY_PROCESS.matcher(head.get(0)).find()
        && head.stream().anyMatch(l -> PYSPY_THREAD.matcher(l).matches())) {
      return Format.PYSPY;
    }
    return Format.NONE;
  }

  /** A thread header of faulthandler's: the thread's hex id ("Stack" headers have none). */
  private static ThreadStack.Builder faulthandlerThread(Matcher header) {
    ThreadStack.Builder thread = ThreadStack.newBuilder();
    if (header.group(1) != null) {
      thread.setThreadId(Long.parseUnsignedLong(header.group(1).substring(2), 16));
    }
    return thread;
  }

  /** A thread header of py-spy's: its native id (hex on some platforms), idle flag and name. */
  private static ThreadStack.Builder pyspyThread(Matcher header) {
    String id = header.group(1);
    return ThreadStack.newBuilder()
        .setThreadId(id.startsWith("0x") ? Long.parseUnsignedLong(id.substring(2), 16) : Long.parseLong(id))
        .setIdle(header.group(2).startsWith("idle"))
        .setName(header.group(3) == null ? "" : header.group(3));
  }

  /**
   * The threads of a dump whose thread headers match {@code header} and whose frame lines match {@code frameLine},
   * read by {@code thread} and {@code frame}. Other lines carry no frame: faulthandler's "<no Python frame>" and
   * "  ..." (a stack cut at its depth limit), py-spy's deeper --locals lines, blank lines.
   */
  private ThreadStacks threads(String text, String source, Pattern header, Function<Matcher,
      ThreadStack.Builder> thread, Pattern frameLine, Function<Matcher, Frame> frame) {
    ThreadStacks.Builder out = ThreadStacks.newBuilder().setSource(source);
    ThreadStack.Builder current = null;
    for (String line : text.lines().toList()) {
      Matcher h = header.matcher(line);
      if (h.matches()) {
        if (current != null) {
          out.addThreads(current);
        }
        current = thread.apply(h);
        continue;
      }
      Matcher f = frameLine.matcher(line);
      if (current != null && f.matches()) {
        current.addFrames(frame.apply(f));
      }
    }
    if (current != null) {
      out.addThreads(current);
    }
    return out.build();
  }

  private Frame frame(String name, String file, String line) {
    Frame f = Frame.newBuilder().setName(name).setFilename(file)
        .setLine(line == null ? 0 : (int) Math.min(Integer.MAX_VALUE, Long.parseLong(line))).build();
    return frames.computeIfAbsent(f, k -> k);
  }

  private static String quote(String text) {
    String first = text.strip().lines().findFirst().orElse("");
    return first.isEmpty() ? "nothing" : "'" + (first.length() > QUOTED ? first.substring(0, QUOTED) + "…" : first)
        + "'";
  }
}
