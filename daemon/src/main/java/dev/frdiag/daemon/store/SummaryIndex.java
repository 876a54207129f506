package dev.frdiag.daemon.store;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's summary index: one JSON line per report written ({@code reports/summaries.jsonl}), the summary plus
 * the size and modification time its file had, so that a start trusts a line only for the file it describes. Lines
 * are only appended while the daemon runs; the whole file is written anew (temporary file, renamed) when it fell
 * behind or holds too many lines of removed reports.
 */
final class SummaryIndex {
  private static final Logger log = LoggerFactory.getLogger(SummaryIndex.class);
  private static final ObjectMapper JSON = new ObjectMapper()
      .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
      .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
      .registerModule(new SimpleModule("frdiag.summaries").addSerializer(Instant.class, new InstantText())
          .addDeserializer(Instant.class, new InstantParser()));
  private static final ObjectReader LINE = JSON.readerFor(Line.class);

  private SummaryIndex() {}

  /**
   * One line: a report's summary and what its file looked like when the summary was taken.
   *
   * @param bytes the file's size
   * @param modifiedNs its modification time, ns since the epoch
   */
  record Line(long bytes, long modifiedNs, StoredReport report) {
    Line {
      Objects.requireNonNull(report, "report");
    }

    /** The line for {@code report} as its file now is. */
    static Line of(StoredReport report, BasicFileAttributes file) {
      return new Line(file.size(), file.lastModifiedTime().to(TimeUnit.NANOSECONDS), report);
    }

    /** True when this line is the summary of job {@code job}'s report {@code reportId} as its file now is. */
    boolean describes(String job, String reportId, BasicFileAttributes file) {
      return report.job().equals(job) && report.reportId().equals(reportId) && bytes == file.size()
          && modifiedNs == file.lastModifiedTime().to(TimeUnit.NANOSECONDS);
    }
  }

  /**
   * What an index file holds.
   *
   * @param lines by report id, the last line of each id
   * @param damaged lines that are not a whole summary (a stop in the middle of an append, an edit)
   * @param missing whether there was no index file at all
   */
  record Contents(Map<String, Line> lines, int damaged, boolean missing) {}

  /** Reads {@code index}; a file that cannot be read at all is as good as missing. */
  static Contents read(Path index) {
    List<Line> parsed;
    // Files.lines splits a UTF-8 file among the cores without reading it first.
    try (Stream<String> text = Files.lines(index, StandardCharsets.UTF_8)) {
      parsed = text.parallel().map(SummaryIndex::parse).toList();
    } catch (NoSuchFileException e) {
      return new Contents(new HashMap<>(), 0, true);
    } catch (IOException | UncheckedIOException e) {
      log.warn("cannot read the summary index {}: {}; every "
          + "report is read from its file", index, e.getMessage());
      return new Contents(new HashMap<>(), 0, true);
    }
    Map<String, Line> lines = new HashMap<>(parsed.size() * 4 / 3 + 1);
    int damaged = 0;
    for (Line l : parsed) {
      if (l == null) {
        damaged++;
      } else {
        lines.put(l.report().reportId(), l);
      }
    }
    return new Contents(lines, damaged, false);
  }

  /** The line's summary; null when it is not one. */
  private static Line parse(String line) {
    try {
      return LINE.readValue(line);
    } catch (JsonProcessingException | RuntimeException e) {
      return null;
    }
  }

  /** {@code lines} as an index file's text. */
  static String text(List<Line> lines) {
    StringBuilder b = new StringBuilder(lines.size() * 512);
    for (Line l : lines) {
      b.append(line(l));
    }
    return b.toString();
  }

  private static String line(Line l) {
    try {
      return JSON.writeValueAsString(l) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write the summary of report " + l.report().reportId(), e);
    }
  }

  /** Appends {@code line} to {@code index} and flushes it to the device. */
  static void append(Path index, Line line) throws IOException {
    try (FileChannel out = FileChannel.open(index, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND)) {
      ByteBuffer bytes = ByteBuffer.wrap(line(line).getBytes(StandardCharsets.UTF_8));
      while (bytes.hasRemaining()) {
        out.write(bytes);
      }
      out.force(false);
    }
  }

  /** An instant as ISO-8601 text, as reports write it. */
  private static final class InstantText extends JsonSerializer<Instant> {
    @Override
    public void serialize(Instant value, JsonGenerator gen, SerializerProvider provider) throws IOException {
      gen.writeString(value.toString());
    }
  }

  private static final class InstantParser extends JsonDeserializer<Instant> {
    @Override
    public Instant deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      return Instant.parse(p.getValueAsString());
    }
  }
}
