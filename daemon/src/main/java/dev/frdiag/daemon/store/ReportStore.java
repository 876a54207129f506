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
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
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
 * lands.
 *
 * <p>In memory the store keeps a {@link StoredReport} per report, not the report: listing, retention and fleet
 * memory read those, and {@link #get} reads the report's file. The summaries are also appended to
 * {@code reports/summaries.jsonl} as reports are written, so a start reads that one file instead of every report:
 * a report file the index does not know (or knows at another size or time) is read whole, an index line whose file
 * is gone is dropped, and the index is written anew when it was missing, damaged or behind. A report file that
 * cannot be read is logged and skipped, never fatal, and never overwritten.
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
  /** The summary index beside the job directories; never a job's directory, since it is a file. */
  static final String INDEX = "summaries.jsonl";
  /** Index lines of removed reports tolerated before the index is written anew (and at least as many as live). */
  static final int STALE_LINES_BEFORE_COMPACTION = 10_000;
  /** Reports kept in memory while the disk refuses them; beyond this the oldest is given up. */
  static final int MAX_PENDING = 1000;
  /** A job's reports oldest first: by number (more digits is a larger number), then by text. */
  private static final Comparator<StoredReport> BY_NUMBER = Comparator.comparingInt(
      (StoredReport r) -> r.reportId().length()).thenComparing(StoredReport::reportId);

  /** Writes one file; the seam tests use to make the disk full or read-only. */
  @FunctionalInterface
  public interface FileWriter {
    void write(Path target, String content) throws IOException;
  }

  /** A report that is written but not yet on disk, and who to tell when it is. */
  private record Pending(Report report, Consumer<Report> onDurable) {}

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
  @GuardedBy("lock")
  private final ArrayDeque<Pending> pending = new ArrayDeque<>();
  /** Orders appends to the index and its compaction; taken before {@link #lock}, never inside it. */
  private final Object indexLock = new Object();
  /** Lines in the index file whose reports retention removed since it was last written whole. */
  @GuardedBy("indexLock")
  private long staleLines;
  private final AtomicLong writeErrors = new AtomicLong();
  private volatile boolean healthy = true;
  /** What the disk said when it last refused a write; null when it never did. */
  private volatile String refusal;
  /** Whether an append to the index failed, so that the next one writes it whole. */
  @GuardedBy("indexLock")
  private boolean indexBroken;

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
    try {
      Files.createDirectories(root);
      synchronized (indexLock) {
        synchronized (lock) {
          load();
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open report store at " + root + ": " + e.getMessage(), e);
    }
    probeWritable();
  }

  /** A report file whose summary is not in the index (or not as the file is now): read whole. */
  private record Unindexed(String job, String reportId, Path file, BasicFileAttributes attributes) {}

  @GuardedBy("lock")
  private void load() throws IOException {
    long t0 = System.nanoTime();
    SummaryIndex.Contents known = SummaryIndex.read(index);
    Map<String, SummaryIndex.Line> lines = known.lines();
    List<Unindexed> unindexed = new ArrayList<>();
    int fromIndex = 0;
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(root)) {
      for (Path entry : entries) {
        String name = entry.getFileName().toString();
        if (Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS) && Contract.JOB_ID.matcher(name).matches()) {
          fromIndex += load(entry, lines, unindexed);
        } else if (name.startsWith(PROBE)) {
          removeLeftover(entry, "the write probe of a daemon that stopped while starting");
        } else if (name.equals(INDEX + TEMPORARY)) {
          removeLeftover(entry, "a summary index write that never finished (the daemon stopped while writing it)");
        } else if (!name.equals(INDEX)) {
          log.warn("ignoring {}: not a job's report directory", entry);
        }
      }
    }
    // Reading whole reports is what start-up spends its time on when the index is missing: both cores do it.
    List<SummaryIndex.Line> read = unindexed.parallelStream().map(ReportStore::readSummary)
        .filter(java.util.Objects::nonNull).toList();
    for (SummaryIndex.Line l : read) {
      add(l);
    }
    byJob.values().forEach(reports -> reports.sort(BY_NUMBER));
    // What is left in the index names files that are gone or changed.
    boolean behind = known.damaged() > 0 || !lines.isEmpty() || !read.isEmpty() || known.missing() && !byId.isEmpty();
    if (known.damaged() > 0) {
      log.warn("ignoring what is damaged in {} ({} of its lines); those reports were read from their files", index,
          known.damaged());
    }
    if (behind) {
      compact();
    }
    log.info("report store: {} reports of {} jobs in {} ms ({} from {}, {} read whole, {} index lines dropped)",
        byId.size(), byJob.size(), (System.nanoTime() - t0) / 1_000_000, fromIndex, INDEX, unindexed.size(),
        lines.size());
  }

  /** Lists one job's directory; returns how many of its reports the index gave. */
  @GuardedBy("lock")
  private int load(Path jobDir, Map<String, SummaryIndex.Line> lines, List<Unindexed> unindexed)
      throws IOException {
    String job = jobDir.getFileName().toString();
    int fromIndex = 0;
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
          add(line);
          fromIndex++;
        } else {
          unindexed.add(new Unindexed(job, id, file, attributes));
        }
      }
    }
    return fromIndex;
  }

  /** The summary of a report file read whole; null (logged) when it is not a good report of its job and name. */
  private static SummaryIndex.Line readSummary(Unindexed u) {
    try {
      Report r = readReport(u.file(), u.attributes().size());
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

  /** The whole report in {@code file}, validated. */
  private static Report readReport(Path file, long size) throws IOException {
    if (size > MAX_REPORT_BYTES) {
      throw new IllegalArgumentException(size + " bytes is more than a report's " + MAX_REPORT_BYTES);
    }
    Report r = ReportJson.read(Files.readString(file, StandardCharsets.UTF_8));
    if (r == null) {
      throw new IllegalArgumentException("it holds no report");
    }
    return r;
  }

  @GuardedBy("lock")
  private void add(SummaryIndex.Line line) {
    StoredReport r = line.report();
    byJob.computeIfAbsent(r.job(), j -> new ArrayList<>()).add(r);
    byId.put(r.reportId(), line);
  }

  /**
   * Writes the index anew from the summaries in memory: at start when it was missing, damaged or behind, and when
   * lines of removed reports outnumber the live ones. A write the disk refuses is logged; the next start reads the
   * files the index misses.
   */
  @GuardedBy("indexLock")
  private void compact() {
    List<SummaryIndex.Line> live;
    synchronized (lock) {
      live = new ArrayList<>(byId.values());
    }
    try {
      writer.write(index, SummaryIndex.text(live));
      staleLines = 0;
      indexBroken = false;
    } catch (IOException | RuntimeException e) {
      // The next append writes it whole again rather than add to a file that misses lines.
      indexBroken = true;
      log.warn("cannot write the summary index {}: {}; the next start reads the report files it misses", index,
          e.getMessage());
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
    indexed(StoredReport.of(report), dir.resolve(report.reportId() + ".json"));
    prune(report.job());
    return true;
  }

  /**
   * Adds the summary of a report just written to memory and to the index, flushed: a report on disk but not in the
   * index (a stop between the two, an append the disk refused) is only read whole at the next start.
   */
  private void indexed(StoredReport summary, Path file) {
    synchronized (indexLock) {
      SummaryIndex.Line line;
      try {
        line = SummaryIndex.Line.of(summary, Files.readAttributes(file, BasicFileAttributes.class,
            LinkOption.NOFOLLOW_LINKS));
      } catch (IOException e) {
        // A line no file matches: the next start reads the report whole.
        line = new SummaryIndex.Line(-1, -1, summary);
      }
      synchronized (lock) {
        add(line);
      }
      try {
        if (indexBroken) {
          // A refused append may have left part of a line, which the next line would be glued to.
          compact();
        } else {
          SummaryIndex.append(index, line);
        }
      } catch (IOException | RuntimeException e) {
        indexBroken = true;
        log.warn("cannot add report {} to the summary index {}: {}; the next start reads its file",
            summary.reportId(), index, e.getMessage());
      }
    }
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
    synchronized (indexLock) {
      staleLines += gone.size();
      int live;
      synchronized (lock) {
        live = byId.size();
      }
      // Keeps the index file within twice what is stored, however long the daemon runs.
      if (staleLines > Math.max(STALE_LINES_BEFORE_COMPACTION, live)) {
        compact();
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
