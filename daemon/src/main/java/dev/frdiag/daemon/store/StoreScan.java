package dev.frdiag.daemon.store;

import dev.frdiag.proto.Contract;
import dev.frdiag.report.Report;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a start of the {@link ReportStore} finds under {@code reports/}: each job directory's report files, checked
 * against the summary index (a file the index does not know, or knows at another size or time, is read whole, on
 * both cores), the index lines whose files are gone, and the leftovers of writes a stop cut short, removed. A report
 * file that cannot be read is logged and skipped, never fatal, and never removed.
 */
final class StoreScan {
  // The store's logger, so these lines keep the name they were always logged under.
  private static final Logger log = LoggerFactory.getLogger(ReportStore.class);
  // Up to 18 digits, so every number fits a long and the next one still matches.
  private static final Pattern REPORT_ID = Pattern.compile("(" + Contract.JOB_ID.pattern() + ")-(\\d{6,18})");

  /** A report file whose summary is not in the index (or not as the file is now): read whole. */
  private record Unindexed(String job, String reportId, Path file, BasicFileAttributes attributes) {}

  private final List<SummaryIndex.Line> found = new ArrayList<>();
  private final Map<String, Long> counters = new HashMap<>();
  private int fromIndex;
  private int readWhole;
  private int dropped;
  private int damaged;
  private boolean indexMissing;
  private boolean behind;

  private StoreScan() {}

  /**
   * Scans {@code root}, the store's {@code reports/} directory, whose summary index is {@code index}.
   *
   * @throws IOException when {@code root} or a job's directory cannot be listed
   */
  static StoreScan of(Path root, Path index) throws IOException {
    StoreScan scan = new StoreScan();
    scan.scan(root, index);
    return scan;
  }

  private void scan(Path root, Path index) throws IOException {
    SummaryIndex.Contents known = SummaryIndex.read(index);
    Map<String, SummaryIndex.Line> lines = known.lines();
    List<Unindexed> unindexed = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(root)) {
      for (Path entry : entries) {
        String name = entry.getFileName().toString();
        if (Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS) && Contract.JOB_ID.matcher(name).matches()) {
          fromIndex += list(entry, lines, unindexed);
        } else if (name.startsWith(ReportStore.PROBE)) {
          removeLeftover(entry, "the write probe of a daemon that stopped while starting");
        } else if (name.equals(ReportStore.INDEX + ReportStore.TEMPORARY)) {
          removeLeftover(entry, "a summary index write that never finished (the daemon stopped while writing it)");
        } else if (!name.equals(ReportStore.INDEX)) {
          log.warn("ignoring {}: not a job's report directory", entry);
        }
      }
    }
    // Reading whole reports is what start-up spends its time on when the index is missing: both cores do it.
    List<SummaryIndex.Line> read = unindexed.parallelStream().map(StoreScan::readSummary)
        .filter(Objects::nonNull).toList();
    found.addAll(read);
    readWhole = unindexed.size();
    // What is left in the index names files that are gone or changed.
    dropped = lines.size();
    damaged = known.damaged();
    indexMissing = known.missing();
    behind = known.damaged() > 0 || !lines.isEmpty() || !read.isEmpty();
  }

  /** The summaries of the good report files, from the index or read whole; in no particular order. */
  List<SummaryIndex.Line> lines() {
    return found;
  }

  /** Job → the highest report number its directory holds, unreadable files included. */
  Map<String, Long> counters() {
    return counters;
  }

  /** Reports whose summary the index gave. */
  int fromIndex() {
    return fromIndex;
  }

  /** Report files read whole, for the index did not know them as they are. */
  int readWhole() {
    return readWhole;
  }

  /** Index lines whose files are gone or changed. */
  int dropped() {
    return dropped;
  }

  /** Index lines that could not be read. */
  int damaged() {
    return damaged;
  }

  /** Whether there was no index file. */
  boolean indexMissing() {
    return indexMissing;
  }

  /** Whether the index is damaged or does not say what the files do: it is to be written anew. */
  boolean behind() {
    return behind;
  }

  /** Lists one job's directory; returns how many of its reports the index gave. */
  private int list(Path jobDir, Map<String, SummaryIndex.Line> lines, List<Unindexed> unindexed)
      throws IOException {
    String job = jobDir.getFileName().toString();
    int given = 0;
    try (DirectoryStream<Path> files = Files.newDirectoryStream(jobDir)) {
      for (Path file : files) {
        String name = file.getFileName().toString();
        if (name.endsWith(".md")) {
          // The Markdown rendering of the JSON beside it: written first, removed last, so one without its JSON is
          // what a stop between the two left. A Markdown file of no report's name is not ours to remove.
          String id = name.substring(0, name.length() - ".md".length());
          if (REPORT_ID.matcher(id).matches() && Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)
              && !Files.exists(jobDir.resolve(id + ".json"), LinkOption.NOFOLLOW_LINKS)) {
            removeLeftover(file, "the Markdown of a report whose JSON was never written or was already removed");
          }
          continue;
        }
        if (name.endsWith(ReportStore.TEMPORARY)) {
          removeLeftover(file, "a report write that never finished (the daemon stopped while writing it)");
          continue;
        }
        if (!name.endsWith(".json")) {
          log.warn("ignoring {}: not a report file", file);
          continue;
        }
        String id = name.substring(0, name.length() - ".json".length());
        var m = REPORT_ID.matcher(id);
        if (!m.matches() || !m.group(1).equals(job)) {
          log.warn("ignoring {}: not named as a report of job {} (<job>-<6 to 18 digits>.json)", file, job);
          continue;
        }
        // Even an unreadable report keeps its number, so a new report never overwrites it.
        counters.merge(job, Long.parseLong(m.group(2)), Math::max);
        BasicFileAttributes attributes;
        try {
          attributes = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
          log.warn("skipping unreadable report file {}: {}", file, e.toString());
          continue;
        }
        // Only plain files: a symlink to /dev/zero or a FIFO must neither hang nor exhaust start-up.
        if (!attributes.isRegularFile()) {
          log.warn("skipping {}: not a regular file", file);
          continue;
        }
        SummaryIndex.Line line = lines.remove(id);
        if (line != null && line.describes(job, id, attributes)) {
          found.add(line);
          given++;
        } else {
          unindexed.add(new Unindexed(job, id, file, attributes));
        }
      }
    }
    return given;
  }

  /** The summary of a report file read whole; null (logged) when it is not a good report of its job and name. */
  private static SummaryIndex.Line readSummary(Unindexed u) {
    try {
      Report r = ReportStore.readReport(u.file(), u.attributes().size());
      if (!u.job().equals(r.job())) {
        throw new IllegalArgumentException("it belongs to job " + r.job() + ", not " + u.job());
      }
      if (!u.reportId().equals(r.reportId())) {
        throw new IllegalArgumentException("it is report " + r.reportId() + ", not " + u.reportId());
      }
      return SummaryIndex.Line.of(StoredReport.of(r), u.attributes());
    } catch (IOException | RuntimeException e) {
      // Whatever is wrong with one file (truncated, garbage, "null", a missing field) must not cost the others.
      log.warn("skipping unreadable report file {}: {}", u.file(), e.getMessage() == null ? e.toString()
          : e.getMessage());
      return null;
    }
  }

  /**
   * Removes a file only this store writes and a stop half-way through leaves behind, saying so; one that cannot be
   * removed is left, and said too.
   */
  private static void removeLeftover(Path file, String what) {
    try {
      Files.deleteIfExists(file);
      log.warn("removed {}: {}", file, what);
    } catch (IOException e) {
      log.warn("ignoring {}: {}, and it cannot be removed: {}", file, what, e.getMessage());
    }
  }
}
