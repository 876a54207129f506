package dev.frdiag.agent;

import dev.frdiag.readers.pytorch.WatchdogLine;
import dev.frdiag.readers.pytorch.WatchdogLogReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One training log followed from where it ended when the agent started; every watchdog line in what is appended
 * goes to the sink. Survives truncation and rotation. Memory is bounded: one chunk of at most
 * {@link #MAX_LOG_READ} bytes and one partial line of at most {@link #MAX_LINE}.
 *
 * <p>Not thread-safe: the agent polls it under its lock.
 */
final class LogFollower {
  // The agent's logger, so operators keep finding these lines under the name they always had.
  private static final Logger log = LoggerFactory.getLogger(NodeAgent.class);
  /** Bytes of one log read per poll, so a huge backlog cannot stall the agent. */
  static final int MAX_LOG_READ = 1 << 20;
  /** Longer lines are cut: the watchdog's lines are short, a glued progress bar is not worth keeping. */
  static final int MAX_LINE = 8192;

  private final Path file;
  private final BiConsumer<WatchdogLine, Path> sink;
  private Object fileKey;
  private long offset;
  /**
   * The last bytes before {@link #offset} as they were read: a file truncated and rewritten past its old size
   * between two polls keeps its size and inode, but not these bytes.
   */
  private byte[] tail = new byte[0];
  /** How many bytes before the offset are compared. */
  static final int TAIL = 64;
  /** The start of a line whose end has not been written yet; at most MAX_LINE bytes are kept. */
  private final ByteArrayOutputStream partial = new ByteArrayOutputStream();

  /**
   * @param sink told each watchdog line and the file it came from, on the polling thread
   */
  LogFollower(Path file, BiConsumer<WatchdogLine, Path> sink) {
    this.file = Objects.requireNonNull(file, "file");
    this.sink = Objects.requireNonNull(sink, "sink");
    BasicFileAttributes a = FileVersion.attributes(file);
    // Start at the end: lines written before the agent started are history, not a new incident.
    this.offset = a == null ? 0 : a.size();
    this.fileKey = a == null ? null : a.fileKey();
    this.tail = readTail();
  }

  /** The {@link #TAIL} bytes before the offset as the file holds them now (fewer at its start). */
  private byte[] readTail() {
    int n = (int) Math.min(TAIL, offset);
    if (n == 0) {
      return new byte[0];
    }
    try (SeekableByteChannel ch = Files.newByteChannel(file, StandardOpenOption.READ)) {
      ch.position(offset - n);
      ByteBuffer buf = ByteBuffer.allocate(n);
      while (buf.hasRemaining() && ch.read(buf) > 0) {
        // Read the whole tail.
      }
      return java.util.Arrays.copyOf(buf.array(), buf.position());
    } catch (IOException e) {
      return new byte[0];
    }
  }

  Path file() {
    return file;
  }

  /** Reads what was appended since the last poll, up to {@link #MAX_LOG_READ} bytes. */
  void poll() {
    BasicFileAttributes a = FileVersion.attributes(file);
    if (a == null) {
      return;
    }
    boolean rotated = fileKey != null && a.fileKey() != null && !fileKey.equals(a.fileKey());
    if (a.size() < offset || rotated || a.size() > offset && !java.util.Arrays.equals(tail, readTail())) {
      // Truncated, rotated to a new file, or rewritten from the start past the old end: its beginning is new.
      offset = 0;
      partial.reset();
    }
    fileKey = a.fileKey();
    if (a.size() == offset) {
      return;
    }
    try (SeekableByteChannel ch = Files.newByteChannel(file, StandardOpenOption.READ)) {
      ch.position(offset);
      ByteBuffer buf = ByteBuffer.allocate((int) Math.min(MAX_LOG_READ, a.size() - offset));
      while (buf.hasRemaining() && ch.read(buf) > 0) {
        // Read until the chunk is full or the file ends.
      }
      offset += buf.position();
      int n = Math.min(TAIL, buf.position());
      tail = n == TAIL || offset == buf.position() ? java.util.Arrays.copyOfRange(buf.array(), buf.position() - n,
          buf.position()) : readTail();
      split(buf.array(), buf.position());
    } catch (NoSuchFileException e) {
      // Rotated away between the look and the read; the next poll sees the new file.
    } catch (IOException e) {
      log.warn("cannot read {}: {}", file, e.toString());
    }
  }

  /** Hands every complete line to the parser; keeps the unfinished end for the next read. */
  private void split(byte[] bytes, int length) {
    int start = 0;
    for (int i = 0; i < length; i++) {
      if (bytes[i] == '\n') {
        append(bytes, start, i - start);
        line(new String(partial.toByteArray(), StandardCharsets.UTF_8));
        partial.reset();
        start = i + 1;
      }
    }
    append(bytes, start, length - start);
  }

  private void append(byte[] bytes, int from, int length) {
    // Beyond MAX_LINE the line is cut: memory stays bounded however long a line without newline grows.
    partial.write(bytes, from, Math.min(length, MAX_LINE - partial.size()));
  }

  private void line(String text) {
    WatchdogLine w = WatchdogLogReader.parse(text, file.getFileName().toString());
    if (w != null) {
      sink.accept(w, file);
    }
  }
}
