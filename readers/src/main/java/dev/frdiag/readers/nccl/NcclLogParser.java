package dev.frdiag.readers.nccl;

import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Reads NCCL_DEBUG logs (NCCL 2.18–2.27, older formats where they differ cheaply) into an {@link NcclLog}.
 *
 * <p>Streaming with bounded memory: lines are not kept, events are kept up to {@link Builder#maxEventsPerKind}
 * per kind (the rest only counted), structural entries up to {@link Builder#maxEntries} per list. Lines longer
 * than {@link #MAX_LINE_BYTES} are read up to that length. Malformed lines are counted, never thrown.
 *
 * <p>Input is validated up front: binary data in the first {@link Builder#sniffLines} lines, or no NCCL line in
 * them, fails with a {@link NotAnNcclLogException} naming the file and the byte or line count.
 *
 * <p>Instances are immutable and thread-safe; each parse has its own state.
 */
public final class NcclLogParser {
  /** Events kept per kind; the rest are counted. */
  public static final int DEFAULT_MAX_EVENTS_PER_KIND = 100;
  /** Entries kept per structural list (connections, rings, trees, NICs, communicators). */
  public static final int DEFAULT_MAX_ENTRIES = 100_000;
  /** Lines that must contain an NCCL (or PyTorch ProcessGroupNCCL) line and no binary data. */
  public static final int DEFAULT_SNIFF_LINES = 10_000;
  /** Longest line read in full; NCCL's own limit is 1,024 bytes plus launcher prefixes. */
  public static final int MAX_LINE_BYTES = 64 * 1024;

  private static final int BUFFER_BYTES = 1 << 20;
  private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private final int maxEventsPerKind;
  private final int maxEntries;
  private final int sniffLines;

  private NcclLogParser(Builder b) {
    this.maxEventsPerKind = b.maxEventsPerKind;
    this.maxEntries = b.maxEntries;
    this.sniffLines = b.sniffLines;
  }

  /** A parser with the default limits. */
  public static NcclLogParser create() {
    return builder().build();
  }

  /** A builder starting from the default limits. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Parses a log file.
   *
   * @throws NotAnNcclLogException if the file is binary or has no NCCL line where one must be
   * @throws IOException if the file cannot be read
   */
  public NcclLog parse(Path file) throws IOException {
    Objects.requireNonNull(file, "file");
    try (InputStream in = Files.newInputStream(file)) {
      return parse(in, file.toString());
    }
  }

  /**
   * Parses a log from a stream, which the caller closes; {@code source} names it in messages.
   *
   * @throws NotAnNcclLogException if the data is binary or has no NCCL line where one must be
   * @throws IOException if the stream fails
   */
  public NcclLog parse(InputStream in, String source) throws IOException {
    Objects.requireNonNull(in, "in");
    Objects.requireNonNull(source, "source");
    LogState state = new LogState(source, maxEventsPerKind, maxEntries);
    byte[] buf = new byte[BUFFER_BYTES];
    int len = 0;
    long bufOffset = 0;
    long total = 0;
    boolean skipping = false;
    int n;
    while ((n = in.read(buf, len, buf.length - len)) >= 0) {
      total += n;
      int end = len + n;
      int lineStart = 0;
      for (int i = nextNewline(buf, len, end); i >= 0; i = nextNewline(buf, lineStart, end)) {
        if (skipping) {
          skipping = false;
        } else {
          line(state, buf, lineStart, i, bufOffset + lineStart, source);
        }
        lineStart = i + 1;
      }
      int rest = end - lineStart;
      if (rest >= MAX_LINE_BYTES && !skipping) {
        // An over-long line: read its start, skip the rest up to the next newline.
        line(state, buf, lineStart, lineStart + MAX_LINE_BYTES, bufOffset + lineStart, source);
        skipping = true;
      }
      if (skipping) {
        rest = 0;
        lineStart = end;
      }
      System.arraycopy(buf, lineStart, buf, 0, rest);
      bufOffset += lineStart;
      len = rest;
    }
    boolean truncated = len > 0 || skipping;
    if (truncated) {
      line(state, buf, 0, len, bufOffset, source);
    }
    return finish(state, source, total, truncated);
  }

  /**
   * Parses a log given as lines without terminators; {@code source} names it in messages.
   *
   * @throws NotAnNcclLogException if the lines hold binary data or no NCCL line where one must be
   */
  public NcclLog parseLines(Iterable<String> lines, String source) throws NotAnNcclLogException {
    Objects.requireNonNull(lines, "lines");
    Objects.requireNonNull(source, "source");
    LogState state = new LogState(source, maxEventsPerKind, maxEntries);
    long chars = 0;
    for (String s : lines) {
      if (state.lineNumber() < sniffLines) {
        for (int i = 0; i < s.length(); i++) {
          if (isBinary(s.charAt(i))) {
            throw new NotAnNcclLogException(source, "binary data at character " + (chars + i));
          }
        }
        chars += s.length() + 1;
      }
      state.accept(s, false);
      sniff(state, source);
    }
    return finish(state, source, 0, false);
  }

  private void line(LogState state, byte[] buf, int from, int to, long offset, String source)
      throws NotAnNcclLogException {
    if (to - from > MAX_LINE_BYTES) {
      to = from + MAX_LINE_BYTES;
    }
    if (to > from && buf[to - 1] == '\r') {
      to--;
    }
    if (state.lineNumber() < sniffLines) {
      for (int i = from; i < to; i++) {
        if (isBinary((char) (buf[i] & 0xff))) {
          throw new NotAnNcclLogException(source, "binary data at byte " + (offset + i - from));
        }
      }
    }
    // ISO-8859-1 copies bytes to chars one for one: the cheapest decoding, and exact for the ASCII NCCL writes.
    state.accept(new String(buf, from, to - from, StandardCharsets.ISO_8859_1), true);
    sniff(state, source);
  }

  private void sniff(LogState state, String source) throws NotAnNcclLogException {
    if (state.lineNumber() == sniffLines && state.recognizedLines() == 0) {
      throw new NotAnNcclLogException(source, "no NCCL line in the first " + sniffLines + " lines");
    }
  }

  private static NcclLog finish(LogState state, String source, long bytes, boolean truncated)
      throws NotAnNcclLogException {
    if (state.lineNumber() == 0) {
      throw new NotAnNcclLogException(source, "empty file");
    }
    if (state.recognizedLines() == 0) {
      throw new NotAnNcclLogException(source, "no NCCL line in the first " + state.lineNumber()
          + (state.lineNumber() == 1 ? " line" : " lines"));
    }
    return state.finish(bytes, truncated);
  }

  /**
   * The index of the first {@code '\n'} in {@code [from, end)}, or -1. Eight bytes at a time (the classic
   * has-zero-byte trick on the word XOR {@code 0x0a…}): three times faster than a byte loop, and splitting lines
   * is most of the work on a log of COLL lines.
   */
  private static int nextNewline(byte[] b, int from, int end) {
    int i = from;
    for (; i + 8 <= end; i += 8) {
      long x = (long) LONGS.get(b, i) ^ 0x0a0a0a0a0a0a0a0aL;
      long found = (x - 0x0101010101010101L) & ~x & 0x8080808080808080L;
      if (found != 0) {
        return i + (Long.numberOfTrailingZeros(found) >>> 3);
      }
    }
    for (; i < end; i++) {
      if (b[i] == '\n') {
        return i;
      }
    }
    return -1;
  }

  /** NUL and C0 controls other than tab, line feed, form feed, carriage return and escape (ANSI colours). */
  private static boolean isBinary(char c) {
    return c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r' && c != 0x1b && c != '\b';
  }

  /** Limits for {@link NcclLogParser}. */
  public static final class Builder {
    private int maxEventsPerKind = DEFAULT_MAX_EVENTS_PER_KIND;
    private int maxEntries = DEFAULT_MAX_ENTRIES;
    private int sniffLines = DEFAULT_SNIFF_LINES;

    private Builder() {}

    /** Events kept per kind; more are counted only. */
    public Builder maxEventsPerKind(int max) {
      if (max < 1) {
        throw new IllegalArgumentException("maxEventsPerKind must be positive, got " + max);
      }
      this.maxEventsPerKind = max;
      return this;
    }

    /** Entries kept per structural list. */
    public Builder maxEntries(int max) {
      if (max < 1) {
        throw new IllegalArgumentException("maxEntries must be positive, got " + max);
      }
      this.maxEntries = max;
      return this;
    }

    /** Lines checked for binary data, within which an NCCL line must appear. */
    public Builder sniffLines(int lines) {
      if (lines < 1) {
        throw new IllegalArgumentException("sniffLines must be positive, got " + lines);
      }
      this.sniffLines = lines;
      return this;
    }

    /** A parser with the limits set so far. */
    public NcclLogParser build() {
      return new NcclLogParser(this);
    }
  }
}
