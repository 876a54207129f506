package dev.frdiag.daemon.store;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.proto.Contract;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.ReportText;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports on disk, so they survive a daemon restart: {@code <dataDir>/reports/<job>/<reportId>.json} plus a
 * Markdown rendering beside it. A report is served and announced only once it is on disk (written, flushed,
 * renamed); one that cannot be written (disk full, read-only) is kept in memory, retried, and announced when it
 * lands.
 *
 * <p>In memory the store keeps a {@link StoredReport} per report, not the report: listing, retention and fleet
 * memory read those, and {@link #get} reads the report's file. The summaries are also appended to
 * {@code reports/summaries.jsonl} as reports are written, so a start reads that one file instead of every report:
 * a report file the index does not know (or knows at another size or time) is read whole, an index line whose file
 * is gone is dropped, and the index is written anew when it was missing, damaged or behind. A report file that
 * cannot be read is logged and skipped, never fatal, and never overwritten.
 *
 * <p>What a start finds on disk is {@link StoreScan}'s to tell, the index is kept by {@link IndexKeeper}, and the
 * reports the disk refused wait in {@link PendingReports}; the store holds the summaries, writes, prunes and reads.
 */
public final class ReportStore {
  private static final Logger log = LoggerFactory.getLogger(ReportStore.class);
  /** Larger files are not reports this daemon wrote. */
  static final long MAX_REPORT_BYTES = 64L * 1024 * 1024;
  /** The file written and removed at start to find out whether the disk takes writes. */
  static final String PROBE = ".write-probe";
  /** How {@link #writeDurably} names the file it writes before renaming it. */
  static final String TEMPORARY = ".tmp";
  /** The summary index beside the job directories; never a job's directory, since it is a file. */
  static final String INDEX = "summaries.jsonl";
  /** A job's reports oldest first: by number (more digits is a larger number), then by text. */
  private static final Comparator<StoredReport> BY_NUMBER = Comparator.comparingInt(
      (StoredReport r) -> r.reportId().length()).thenComparing(StoredReport::reportId);

  /** Writes one file; the seam tests use to make the disk full or read-only. */
  @FunctionalInterface
  public interface FileWriter {
    void write(Path target, String content) throws IOException;
  }

  private final Path root;
  private final Path index;
  private final FileWriter writer;
  private final Retention retention;
  private final java.time.Clock clock;
  private final Object lock = new Object();
  /** Job → summaries, oldest first. */
  @GuardedBy("lock")
  private final Map<String, List<StoredReport>> byJob = new TreeMap<>();
  /** Report id → its index line: what {@link #get} finds, and what a compaction writes. */
  @GuardedBy("lock")
  private final Map<String, SummaryIndex.Line> byId = new HashMap<>();
  /** Job → the last report number used. */
  @GuardedBy("lock")
  private final Map<String, Long> counters = new HashMap<>();
  /** Reports the disk refused, until they land. */
  private final PendingReports pending = new PendingReports();
  /** Appends to the index and rewrites it; its lock is taken before {@link #lock}, never inside it. */
  private final IndexKeeper indexKeeper;
  private final AtomicLong writeErrors = new AtomicLong();
  private volatile boolean healthy = true;
  /** What the disk said when it last refused a write; null when it never did. */
  private volatile String refusal;

  /**
   * Opens (creating if needed) the store under {@code dataDir} and loads its summaries. Files that are not readable
   * reports are logged and left where they are.
   *
   * @throws UncheckedIOException when the directory cannot be created or listed
   */
  public ReportStore(Path dataDir) {
    this(dataDir, ReportStore::writeDurably);
  }

  /** A store that writes its files through {@code writer}. */
  public ReportStore(Path dataDir, FileWriter writer) {
    this(dataDir, writer, Retention.KEEP_ALL, java.time.Clock.systemUTC());
  }

  /** A store that keeps only what {@code retention} allows, judged by {@code clock}. */
  public ReportStore(Path dataDir, FileWriter writer, Retention retention, java.time.Clock clock) {
    this.root = dataDir.resolve("reports");
    this.index = root.resolve(INDEX);
    this.writer = writer;
    this.retention = retention;
    this.clock = clock;
    this.indexKeeper = new IndexKeeper(index, writer, this::liveLines);
    try {
      Files.createDirectories(root);
      load();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open report store at " + root + ": " + e.getMessage(), e);
    }
    probeWritable();
  }

  private void load() throws IOException {
    long t0 = System.nanoTime();
    StoreScan scan = StoreScan.of(root, index);
    int reports;
    int jobs;
    synchronized (lock) {
      scan.lines().forEach(this::add);
      counters.putAll(scan.counters());
      byJob.values().forEach(r -> r.sort(BY_NUMBER));
      reports = byId.size();
      jobs = byJob.size();
    }
    if (scan.damaged() > 0) {
      log.warn("ignoring what is damaged in {} ({} of its lines); those reports were read from their files", index,
          scan.damaged());
    }
    if (scan.behind() || scan.indexMissing() && reports > 0) {
      indexKeeper.compact();
    }
    log.info("report store: {} reports of {} jobs in {} ms ({} from {}, {} read whole, {} index lines dropped)",
        reports, jobs, (System.nanoTime() - t0) / 1_000_000, scan.fromIndex(), INDEX, scan.readWhole(),
        scan.dropped());
  }

  /** The whole report in {@code file}, validated. */
  static Report readReport(Path file, long size) throws IOException {
    if (size > MAX_REPORT_BYTES) {
      throw new IllegalArgumentException(size + " bytes is more than a report's " + MAX_REPORT_BYTES);
    }
    Report r = ReportJson.read(Files.readString(file, StandardCharsets.UTF_8));
    if (r == null) {
      throw new IllegalArgumentException("it holds no report");
    }
    return r;
  }

  /** Adds a report's summary, or replaces the one it had: a report written again (a hang that ended by itself). */
  @GuardedBy("lock")
  private void add(SummaryIndex.Line line) {
    StoredReport r = line.report();
    List<StoredReport> reports = byJob.computeIfAbsent(r.job(), j -> new ArrayList<>());
    if (byId.put(r.reportId(), line) == null) {
      reports.add(r);
    } else {
      reports.replaceAll(old -> old.reportId().equals(r.reportId()) ? r : old);
    }
  }

  /** The summaries as index lines: what a rewrite of the index holds. */
  private List<SummaryIndex.Line> liveLines() {
    synchronized (lock) {
      return new ArrayList<>(byId.values());
    }
  }

  /** Finds out at start, not at the first hang, that reports cannot be written here. */
  private void probeWritable() {
    Path probe = root.resolve(PROBE);
    try {
      writer.write(probe, "frdiag write probe\n");
      Files.deleteIfExists(probe);
    } catch (IOException | RuntimeException e) {
      healthy = false;
      refusal = e.getMessage();
      log.error("cannot write reports under {}: {}; new reports are kept in memory and written when it can be",
          root, e.getMessage());
    }
  }

  /** The id the next report of {@code job} gets: "job-000001", "job-000002", … */
  public String nextReportId(String job) {
    requireJobId(job);
    synchronized (lock) {
      long next = counters.merge(job, 1L, Long::sum);
      return String.format("%s-%06d", job, next);
    }
  }

  /** Saves the report; see {@link #save(Report, Consumer)}. */
  public void save(Report report) {
    save(report, r -> { });
  }

  /**
   * Writes the report (JSON and Markdown) durably, indexes it, then tells {@code onDurable}. When the disk refuses
   * it, the report is kept in memory and {@link #retryPending} writes it later; {@code onDurable} runs then. A report
   * with the id of one already stored replaces it (a hang that ended by itself, {@link Report#recovered}).
   */
  public void save(Report report, Consumer<Report> onDurable) {
    save(report, onDurable, why -> { });
  }

  /**
   * As {@link #save(Report, Consumer)}, and when the disk refuses the report (or earlier ones still wait), tells
   * {@code onRefused} at once what the disk said, so that whoever waits for the report need not wait for the disk.
   */
  public void save(Report report, Consumer<Report> onDurable, Consumer<String> onRefused) {
    requireJobId(report.job());
    // Keep the order: reports wait behind the ones the disk already refused.
    if (pending.queueBehindOthers(report, onDurable)) {
      onRefused.accept(refusal);
      return;
    }
    if (!write(report)) {
      pending.add(report, onDurable);
      onRefused.accept(refusal);
      return;
    }
    onDurable.accept(report);
  }


  /** Writes the reports the disk refused earlier, oldest first, until one fails again. */
  public void retryPending() {
    while (true) {
      PendingReports.Pending next = pending.oldest();
      if (next == null || !write(next.report())) {
        return;
      }
      pending.written(next);
      log.info("report {} written after the disk refused it earlier", next.report().reportId());
      next.onDurable().accept(next.report());
    }
  }

  /** Writes one report's files and indexes it; false (logged, counted) when the disk refused. */
  private boolean write(Report report) {
    Path dir = root.resolve(report.job());
    // Both renderings before either file: a report that cannot be rendered (a heap exhausted by a huge job) leaves
    // nothing behind, rather than a Markdown file with no report beside it.
    String markdown = ReportText.markdown(report);
    String json = ReportJson.write(report);
    Path md = dir.resolve(report.reportId() + ".md");
    try {
      Files.createDirectories(dir);
      writer.write(md, markdown);
      // The JSON is what a restart loads: written last, so a report on disk is always a whole one.
      try {
        writer.write(dir.resolve(report.reportId() + ".json"), json);
      } catch (IOException | UncheckedIOException e) {
        // Both or neither: the retry writes the two again.
        deleteQuietly(md);
        throw e;
      }
    } catch (IOException | UncheckedIOException e) {
      writeErrors.incrementAndGet();
      boolean wasHealthy = healthy;
      healthy = false;
      String why = e.getMessage();
      refusal = why;
      if (wasHealthy) {
        log.error("cannot write report {} under {}: {}; it is kept in memory and written when the disk allows",
            report.reportId(), dir, why);
      } else {
        log.warn("report {} still waits for the disk under {}: {}", report.reportId(), dir, why);
      }
      return false;
    }
    healthy = true;
    indexed(StoredReport.of(report), dir.resolve(report.reportId() + ".json"));
    prune(report.job());
    return true;
  }

  /**
   * Adds the summary of a report just written to memory and to the index, flushed: a report on disk but not in the
   * index (a stop between the two, an append the disk refused) is only read whole at the next start.
   */
  private void indexed(StoredReport summary, Path file) {
    SummaryIndex.Line line;
    try {
      line = SummaryIndex.Line.of(summary, Files.readAttributes(file, BasicFileAttributes.class,
          LinkOption.NOFOLLOW_LINKS));
    } catch (IOException e) {
      // A line no file matches: the next start reads the report whole.
      line = new SummaryIndex.Line(-1, -1, summary);
    }
    SummaryIndex.Line added = line;
    indexKeeper.append(added, () -> {
      synchronized (lock) {
        add(added);
      }
    });
  }

  private static void deleteQuietly(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      log.warn("cannot remove {} after its report failed to write: {}", file, e.getMessage());
    }
  }

  /** Removes the job's reports the retention no longer allows, oldest first; never the newest. */
  private void prune(String job) {
    List<StoredReport> gone = new ArrayList<>();
    synchronized (lock) {
      List<StoredReport> reports = byJob.get(job);
      if (reports == null) {
        return;
      }
      java.time.Instant cutoff = retention.maxAge().isZero() ? null : clock.instant().minus(retention.maxAge());
      while (reports.size() > 1 && ((retention.perJob() > 0 && reports.size() > retention.perJob())
          || (cutoff != null && reports.get(0).createdAt().isBefore(cutoff)))) {
        StoredReport r = reports.remove(0);
        byId.remove(r.reportId());
        gone.add(r);
      }
    }
    if (gone.isEmpty()) {
      return;
    }
    for (StoredReport r : gone) {
      Path dir = root.resolve(r.job());
      try {
        // The JSON first: a crash between the two leaves a stray Markdown file, never a report without it.
        Files.deleteIfExists(dir.resolve(r.reportId() + ".json"));
        Files.deleteIfExists(dir.resolve(r.reportId() + ".md"));
        log.info("report {} removed: retention {}", r.reportId(), retention);
      } catch (IOException e) {
        log.warn("cannot remove report {} past its retention: {}", r.reportId(), e.getMessage());
      }
    }
    indexKeeper.removed(gone.size(), () -> {
      synchronized (lock) {
        return byId.size();
      }
    });
  }

  /** False while the data dir refuses writes (disk full, read-only). */
  public boolean healthy() {
    return healthy;
  }

  /** Reports written but not yet on disk. */
  public int pendingReports() {
    return pending.size();
  }

  /** Writes the disk has refused since start. */
  public long writeErrors() {
    return writeErrors.get();
  }

  /** The jobs with at least one stored report, sorted. */
  public List<String> jobs() {
    synchronized (lock) {
      return byJob.entrySet().stream().filter(e -> !e.getValue().isEmpty()).map(Map.Entry::getKey).toList();
    }
  }

  /** Reports of {@code job}, newest first, as summaries. */
  public List<StoredReport> list(String job) {
    synchronized (lock) {
      List<StoredReport> reports = new ArrayList<>(byJob.getOrDefault(job, List.of()));
      java.util.Collections.reverse(reports);
      return reports;
    }
  }

  /**
   * The newest report of {@code job}, whole, read from its file.
   *
   * @throws ReportUnreadableException when its file can no longer be read
   */
  public Optional<Report> latest(String job) {
    return latestSummary(job).map(this::read);
  }

  /** The summary of the newest report of {@code job}. */
  public Optional<StoredReport> latestSummary(String job) {
    synchronized (lock) {
      List<StoredReport> reports = byJob.get(job);
      return reports == null || reports.isEmpty() ? Optional.empty() : Optional.of(reports.get(reports.size() - 1));
    }
  }

  /** The summary of report {@code reportId}; empty when the store holds no such report. */
  public Optional<StoredReport> find(String reportId) {
    synchronized (lock) {
      SummaryIndex.Line line = byId.get(reportId);
      return line == null ? Optional.empty() : Optional.of(line.report());
    }
  }

  /**
   * The whole report {@code reportId}, read from its file; empty when the store holds no such report.
   *
   * @throws ReportUnreadableException when the store holds it but its file can no longer be read
   */
  public Optional<Report> get(String reportId) {
    return find(reportId).map(this::read);
  }

  /**
   * The whole report {@code summary} summarises, read from its file.
   *
   * @throws ReportUnreadableException when its file can no longer be read as that report
   */
  public Report read(StoredReport summary) {
    Path file = path(summary.job(), summary.reportId());
    try {
      BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class,
          LinkOption.NOFOLLOW_LINKS);
      if (!attributes.isRegularFile()) {
        throw new IllegalArgumentException("not a regular file");
      }
      Report r = readReport(file, attributes.size());
      if (!r.reportId().equals(summary.reportId()) || !r.job().equals(summary.job())) {
        throw new IllegalArgumentException("it holds report " + r.reportId() + " of job " + r.job());
      }
      return r;
    } catch (NoSuchFileException e) {
      throw new ReportUnreadableException(summary.reportId(), file, "the file is gone");
    } catch (IOException | RuntimeException e) {
      throw new ReportUnreadableException(summary.reportId(), file, e.getMessage() == null ? e.toString()
          : e.getMessage());
    }
  }

  /** Where the files of {@code reportId} are (the JSON path). */
  public Path pathOf(Report report) {
    return path(report.job(), report.reportId());
  }

  private Path path(String job, String reportId) {
    return root.resolve(job).resolve(reportId + ".json");
  }

  private static void requireJobId(String job) {
    if (job == null || !Contract.JOB_ID.matcher(job).matches()) {
      throw new IllegalArgumentException("invalid job id '" + job + "': " + Contract.JOB_ID_RULE);
    }
  }

  /**
   * Writes {@code content} to {@code target} so that a crash at any moment leaves either the whole file or none:
   * a temporary file, flushed to the device, renamed over the target, and the directory flushed too.
   */
  public static void writeDurably(Path target, String content) throws IOException {
    Path tmp = target.resolveSibling(target.getFileName() + TEMPORARY);
    try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
        StandardOpenOption.WRITE)) {
      ByteBuffer bytes = ByteBuffer.wrap(content.getBytes(StandardCharsets.UTF_8));
      while (bytes.hasRemaining()) {
        out.write(bytes);
      }
      out.force(true);
    } catch (IOException e) {
      Files.deleteIfExists(tmp);
      throw e;
    }
    try {
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
    }
    try (FileChannel dir = FileChannel.open(target.getParent(), StandardOpenOption.READ)) {
      dir.force(true);
    } catch (IOException e) {
      // Some file systems cannot open a directory for syncing; the rename itself is still atomic there.
    }
  }
}
