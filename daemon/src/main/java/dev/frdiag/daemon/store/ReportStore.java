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
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports on disk, so they survive a daemon restart: {@code <dataDir>/reports/<job>/<reportId>.json} plus a
 * Markdown rendering beside it. A report is served and announced only once it is on disk (written, flushed,
 * renamed); one that cannot be written (disk full, read-only) is kept in memory, retried, and announced when it
 * lands. The index is rebuilt from the files at start; a file that cannot be read is logged and skipped, never
 * fatal, and never overwritten.
 */
public final class ReportStore {
  private static final Logger log = LoggerFactory.getLogger(ReportStore.class);
  // Up to 18 digits, so every number fits a long and the next one still matches.
  private static final Pattern REPORT_ID = Pattern.compile("(" + Contract.JOB_ID.pattern() + ")-(\\d{6,18})");
  /** Larger files are not reports this daemon wrote. */
  static final long MAX_REPORT_BYTES = 64L * 1024 * 1024;
  /** The file written and removed at start to find out whether the disk takes writes. */
  private static final String PROBE = ".write-probe";
  /** How {@link #writeDurably} names the file it writes before renaming it. */
  private static final String TEMPORARY = ".tmp";
  /** Reports kept in memory while the disk refuses them; beyond this the oldest is given up. */
  static final int MAX_PENDING = 1000;

  /** Writes one file; the seam tests use to make the disk full or read-only. */
  @FunctionalInterface
  public interface FileWriter {
    void write(Path target, String content) throws IOException;
  }

  /** A report that is written but not yet on disk, and who to tell when it is. */
  private record Pending(Report report, Consumer<Report> onDurable) {}

  private final Path root;
  private final FileWriter writer;
  private final Retention retention;
  private final java.time.Clock clock;
  private final Object lock = new Object();
  /** Job → reports, oldest first. */
  @GuardedBy("lock")
  private final Map<String, List<Report>> byJob = new TreeMap<>();
  /** Job → the last report number used. */
  @GuardedBy("lock")
  private final Map<String, Long> counters = new HashMap<>();
  @GuardedBy("lock")
  private final ArrayDeque<Pending> pending = new ArrayDeque<>();
  private final AtomicLong writeErrors = new AtomicLong();
  private volatile boolean healthy = true;
  /** What the disk said when it last refused a write; null when it never did. */
  private volatile String refusal;

  /**
   * Opens (creating if needed) the store under {@code dataDir} and loads its index. Files that are not readable
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
    this.writer = writer;
    this.retention = retention;
    this.clock = clock;
    try {
      Files.createDirectories(root);
      synchronized (lock) {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(root)) {
          for (Path entry : entries) {
            if (Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS) && Contract.JOB_ID.matcher(entry.getFileName().toString()).matches()) {
              load(entry);
            } else if (entry.getFileName().toString().startsWith(PROBE)) {
              removeLeftover(entry, "the write probe of a daemon that stopped while starting");
            } else {
              log.warn("ignoring {}: not a job's report directory", entry);
            }
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open report store at " + root + ": " + e.getMessage(), e);
    }
    probeWritable();
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

  @GuardedBy("lock")
  private void load(Path jobDir) throws IOException {
    String job = jobDir.getFileName().toString();
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
        if (name.endsWith(TEMPORARY)) {
          removeLeftover(file, "a report write that never finished (the daemon stopped while writing it)");
          continue;
        }
        if (!name.endsWith(".json")) {
          log.warn("ignoring {}: not a report file", file);
          continue;
        }
        var m = REPORT_ID.matcher(name.substring(0, name.length() - ".json".length()));
        if (!m.matches() || !m.group(1).equals(job)) {
          log.warn("ignoring {}: not named as a report of job {} (<job>-<6 to 18 digits>.json)", file, job);
          continue;
        }
        // Even an unreadable report keeps its number, so a new report never overwrites it.
        counters.merge(job, Long.parseLong(m.group(2)), Math::max);
        // Only plain files: a symlink to /dev/zero or a FIFO must neither hang nor exhaust start-up.
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
          log.warn("skipping {}: not a regular file", file);
          continue;
        }
        try {
          long size = Files.size(file);
          if (size > MAX_REPORT_BYTES) {
            throw new IllegalArgumentException(size + " bytes is more than a report's " + MAX_REPORT_BYTES);
          }
          Report r = ReportJson.read(Files.readString(file, StandardCharsets.UTF_8));
          if (r == null) {
            throw new IllegalArgumentException("it holds no report");
          }
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

  @GuardedBy("lock")
  private void index(Report r) {
    var m = REPORT_ID.matcher(r.reportId());
    if (!m.matches() || !m.group(1).equals(r.job())) {
      throw new IllegalArgumentException("report id '" + r.reportId() + "' does not belong to job " + r.job());
    }
    byJob.computeIfAbsent(r.job(), j -> new ArrayList<>()).add(r);
    counters.merge(r.job(), Long.parseLong(m.group(2)), Math::max);
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
   * it, the report is kept in memory and {@link #retryPending} writes it later; {@code onDurable} runs then.
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
    boolean waits;
    synchronized (lock) {
      // Keep the order: reports wait behind the ones the disk already refused.
      waits = !pending.isEmpty();
      if (waits) {
        enqueue(new Pending(report, onDurable));
      }
    }
    if (waits) {
      onRefused.accept(refusal);
      return;
    }
    if (!write(report)) {
      synchronized (lock) {
        enqueue(new Pending(report, onDurable));
      }
      onRefused.accept(refusal);
      return;
    }
    onDurable.accept(report);
  }


  @GuardedBy("lock")
  private void enqueue(Pending p) {
    if (pending.size() >= MAX_PENDING) {
      Pending dropped = pending.removeFirst();
      log.error("giving up report {} (job {}, verdict {}): {} reports are waiting for the disk already",
          dropped.report().reportId(), dropped.report().job(), dropped.report().verdict(), MAX_PENDING);
    }
    pending.addLast(p);
  }

  /** Writes the reports the disk refused earlier, oldest first, until one fails again. */
  public void retryPending() {
    while (true) {
      Pending next;
      synchronized (lock) {
        next = pending.peekFirst();
      }
      if (next == null || !write(next.report())) {
        return;
      }
      synchronized (lock) {
        pending.remove(next);
      }
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
    synchronized (lock) {
      byJob.computeIfAbsent(report.job(), j -> new ArrayList<>()).add(report);
    }
    prune(report.job());
    return true;
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
    List<Report> gone = new ArrayList<>();
    synchronized (lock) {
      List<Report> reports = byJob.get(job);
      if (reports == null) {
        return;
      }
      java.time.Instant cutoff = retention.maxAge().isZero() ? null : clock.instant().minus(retention.maxAge());
      while (reports.size() > 1 && ((retention.perJob() > 0 && reports.size() > retention.perJob())
          || (cutoff != null && reports.get(0).createdAt().isBefore(cutoff)))) {
        gone.add(reports.remove(0));
      }
    }
    for (Report r : gone) {
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
  }

  /** False while the data dir refuses writes (disk full, read-only). */
  public boolean healthy() {
    return healthy;
  }

  /** Reports written but not yet on disk. */
  public int pendingReports() {
    synchronized (lock) {
      return pending.size();
    }
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
