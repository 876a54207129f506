package dev.frdiag.daemon.store;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.ReportText;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports on disk, so they survive a daemon restart: {@code <dataDir>/reports/<job>/<reportId>.json} plus a
 * Markdown rendering beside it. The index is rebuilt from the files at start; a file that cannot be read is
 * logged and skipped, never fatal.
 */
public final class ReportStore {
  private static final Logger log = LoggerFactory.getLogger(ReportStore.class);
  /** Job ids become directory names, so they are restricted to a safe alphabet. */
  public static final Pattern JOB_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
  private static final Pattern REPORT_ID = Pattern.compile("(" + JOB_ID.pattern() + ")-(\\d{6,})");

  private final Path root;
  private final Object lock = new Object();
  /** Job → reports, oldest first. */
  @GuardedBy("lock")
  private final Map<String, List<Report>> byJob = new TreeMap<>();
  /** Job → the last report number used. */
  @GuardedBy("lock")
  private final Map<String, Integer> counters = new HashMap<>();

  /**
   * Opens (creating if needed) the store under {@code dataDir} and loads its index. Files that are not readable
   * reports are logged and left where they are.
   *
   * @throws UncheckedIOException when the directory cannot be created or listed
   */
  public ReportStore(Path dataDir) {
    this.root = dataDir.resolve("reports");
    try {
      Files.createDirectories(root);
      synchronized (lock) {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(root)) {
          for (Path entry : entries) {
            if (Files.isDirectory(entry) && JOB_ID.matcher(entry.getFileName().toString()).matches()) {
              load(entry);
            } else {
              log.warn("ignoring {}: not a job's report directory", entry);
            }
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open report store at " + root + ": " + e.getMessage(), e);
    }
  }

  @GuardedBy("lock")
  private void load(Path jobDir) throws IOException {
    String job = jobDir.getFileName().toString();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(jobDir)) {
      for (Path file : files) {
        String name = file.getFileName().toString();
        if (name.endsWith(".md")) {
          // The Markdown rendering of the JSON beside it.
          continue;
        }
        if (name.endsWith(".tmp")) {
          log.warn("ignoring {}: a report write that never finished (the daemon stopped while writing it)", file);
          continue;
        }
        if (!name.endsWith(".json")) {
          log.warn("ignoring {}: not a report file", file);
          continue;
        }
        // Even an unreadable report keeps its number, so a new report never overwrites it.
        var m = REPORT_ID.matcher(name.substring(0, name.length() - ".json".length()));
        if (m.matches() && m.group(1).equals(job)) {
          counters.merge(job, Integer.parseInt(m.group(2)), Math::max);
        }
        try {
          Report r = ReportJson.read(Files.readString(file, StandardCharsets.UTF_8));
          if (!job.equals(r.job())) {
            throw new IllegalArgumentException("it belongs to job " + r.job() + ", not " + job);
          }
          index(r);
        } catch (IOException | RuntimeException e) {
          // Whatever is wrong with one file (truncated, garbage, "null", a missing field) must not cost the others.
          log.warn("skipping unreadable report file {}: {}", file,
              e.getMessage() == null ? e.toString() : e.getMessage());
        }
      }
    }
    List<Report> reports = byJob.get(job);
    if (reports != null) {
      reports.sort(Comparator.comparing(Report::reportId));
    }
  }

  @GuardedBy("lock")
  private void index(Report r) {
    var m = REPORT_ID.matcher(r.reportId());
    if (!m.matches() || !m.group(1).equals(r.job())) {
      throw new IllegalArgumentException("report id '" + r.reportId() + "' does not belong to job " + r.job());
    }
    byJob.computeIfAbsent(r.job(), j -> new ArrayList<>()).add(r);
    counters.merge(r.job(), Integer.parseInt(m.group(2)), Math::max);
  }

  /** The id the next report of {@code job} gets: "job-000001", "job-000002", … */
  public String nextReportId(String job) {
    requireJobId(job);
    synchronized (lock) {
      int next = counters.merge(job, 1, Integer::sum);
      return String.format("%s-%06d", job, next);
    }
  }

  /**
   * Writes the report (JSON and Markdown) atomically and indexes it.
   *
   * @throws UncheckedIOException when it cannot be written
   */
  public void save(Report report) {
    requireJobId(report.job());
    Path dir = root.resolve(report.job());
    try {
      Files.createDirectories(dir);
      writeAtomically(dir.resolve(report.reportId() + ".md"), ReportText.markdown(report));
      writeAtomically(dir.resolve(report.reportId() + ".json"), ReportJson.write(report));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write report " + report.reportId() + " under " + dir, e);
    }
    synchronized (lock) {
      byJob.computeIfAbsent(report.job(), j -> new ArrayList<>()).add(report);
    }
  }

  /** Reports of {@code job}, newest first. */
  public List<Report> list(String job) {
    synchronized (lock) {
      List<Report> reports = new ArrayList<>(byJob.getOrDefault(job, List.of()));
      java.util.Collections.reverse(reports);
      return reports;
    }
  }

  /** The newest report of {@code job}. */
  public Optional<Report> latest(String job) {
    synchronized (lock) {
      List<Report> reports = byJob.get(job);
      return reports == null || reports.isEmpty() ? Optional.empty() : Optional.of(reports.get(reports.size() - 1));
    }
  }

  public Optional<Report> get(String reportId) {
    var m = REPORT_ID.matcher(reportId);
    if (!m.matches()) {
      return Optional.empty();
    }
    synchronized (lock) {
      return byJob.getOrDefault(m.group(1), List.of()).stream()
          .filter(r -> r.reportId().equals(reportId)).findFirst();
    }
  }

  /** Where the files of {@code reportId} are (the JSON path). */
  public Path pathOf(Report report) {
    return root.resolve(report.job()).resolve(report.reportId() + ".json");
  }

  private static void requireJobId(String job) {
    if (job == null || !JOB_ID.matcher(job).matches()) {
      throw new IllegalArgumentException("invalid job id '" + job + "': use 1-128 of A-Z a-z 0-9 . _ - "
          + "starting with a letter or digit");
    }
  }

  private static void writeAtomically(Path target, String content) throws IOException {
    Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
    Files.writeString(tmp, content, StandardCharsets.UTF_8);
    try {
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
    }
  }
}
