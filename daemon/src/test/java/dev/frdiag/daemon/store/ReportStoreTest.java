package dev.frdiag.daemon.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** Reports on disk: what a restarted daemon finds, and what it does with files that are not good reports. */
class ReportStoreTest {
  @TempDir
  Path dataDir;

  private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
  private final Logger storeLog = (Logger) LoggerFactory.getLogger(ReportStore.class);

  @BeforeEach
  void captureLog() {
    logged.start();
    storeLog.addAppender(logged);
  }

  @AfterEach
  void releaseLog() {
    storeLog.detachAppender(logged);
  }

  /** A report as a daemon writes it, read back through the public JSON contract. */
  private static Report report(String reportId, String job) {
    return ReportJson.read("""
        {"schema": "frdiag.report/v1", "report_id": "%s", "job": "%s", "verdict": "HANG",
         "symptom": "CPU_STALL", "headline": "rank 1 never issued all_reduce #3 on pg 0",
         "culprit_ranks": [1], "confidence": 0.9, "created_at": "2026-01-02T03:04:05Z", "trigger": "stall",
         "timeline": [{"at": "2026-01-02T03:04:05Z", "event": "stall detected"}],
         "recommendation": "look at what rank 1 was doing"}
        """.formatted(reportId, job));
  }

  private Report saved(ReportStore store, String job) {
    Report r = report(store.nextReportId(job), job);
    store.save(r);
    return r;
  }

  private Path jobDir(String job) {
    return dataDir.resolve("reports").resolve(job);
  }

  private List<String> warnings() {
    return logged.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
        .map(ILoggingEvent::getFormattedMessage).toList();
  }

  @Test
  void reportsSurviveARestartAndIdsContinue() {
    ReportStore before = new ReportStore(dataDir);
    Report a1 = saved(before, "a");
    Report a2 = saved(before, "a");
    Report b1 = saved(before, "b");

    ReportStore after = new ReportStore(dataDir);
    assertThat(after.list("a")).containsExactly(StoredReport.of(a2), StoredReport.of(a1));
    assertThat(after.list("b")).containsExactly(StoredReport.of(b1));
    assertThat(after.get("a-000001")).contains(a1);
    assertThat(after.latest("a")).contains(a2);
    assertThat(after.latestSummary("a")).contains(StoredReport.of(a2));
    assertThat(after.nextReportId("a")).isEqualTo("a-000003");
    assertThat(after.nextReportId("b")).isEqualTo("b-000002");
    assertThat(after.nextReportId("c")).isEqualTo("c-000001");
    assertThat(warnings()).isEmpty();
  }

  @Test
  void savedReportIsWholeJsonAndMarkdownWithNoTemporaryFileLeft() throws IOException {
    ReportStore store = new ReportStore(dataDir);
    Report r = saved(store, "a");
    assertThat(store.pathOf(r)).isEqualTo(jobDir("a").resolve("a-000001.json"));
    assertThat(ReportJson.read(Files.readString(store.pathOf(r)))).isEqualTo(r);
    try (var files = Files.list(jobDir("a"))) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("a-000001.json",
          "a-000001.md");
    }
  }

  @Test
  void corruptReportFilesAreSkippedWithAWarningNamingEachAndTheOthersStillLoad() throws IOException {
    ReportStore before = new ReportStore(dataDir);
    Report good = saved(before, "a");
    String json = Files.readString(before.pathOf(good));
    Path garbage = write(jobDir("a").resolve("a-000002.json"), "\u0000\u0001 not json at all");
    Path literalNull = write(jobDir("a").resolve("a-000003.json"), "null");
    Path truncated = write(jobDir("a").resolve("a-000004.json"), json.substring(0, json.length() / 2));
    Path empty = write(jobDir("a").resolve("a-000005.json"), "");
    Path otherJobs = write(jobDir("a").resolve("a-000006.json"), json.replace("\"job\" : \"a\"", "\"job\" : \"b\"")
        .replace("a-000001", "b-000001"));

    ReportStore after = new ReportStore(dataDir);

    assertThat(after.list("a")).containsExactly(StoredReport.of(good));
    assertThat(after.list("b")).isEmpty();
    assertThat(warnings()).hasSize(5);
    for (Path file : List.of(garbage, literalNull, truncated, empty, otherJobs)) {
      assertThat(warnings()).anySatisfy(w -> assertThat(w).startsWith("skipping unreadable report file " + file
          + ": "));
    }
    assertThat(warnings()).anySatisfy(w -> assertThat(w).endsWith(otherJobs + ": it belongs to job b, not a"));
    // The unreadable files stay for inspection, and a new report never overwrites one of them.
    assertThat(after.nextReportId("a")).isEqualTo("a-000007");
    assertThat(garbage).exists();
  }

  @Test
  void whatAStopHalfWayThroughAWriteLeavesIsRemovedAtStartAndTheReportsBeforeItLoad() throws IOException {
    ReportStore before = new ReportStore(dataDir);
    Report good = saved(before, "a");
    String json = Files.readString(before.pathOf(good));
    String markdown = Files.readString(jobDir("a").resolve("a-000001.md"));
    // What a crash mid-save leaves: the temporary file, never a half-written report under its real name; or, between
    // the two files of a report, its Markdown alone; or the probe of a start that never finished.
    Path partial = write(jobDir("a").resolve("a-000002.json.tmp"), json.substring(0, 100));
    Path partialMarkdown = write(jobDir("a").resolve("a-000003.md.tmp"), markdown.substring(0, 10));
    Path markdownAlone = write(jobDir("a").resolve("a-000003.md"), markdown);
    Path probe = write(dataDir.resolve("reports").resolve(".write-probe.tmp"), "frdiag");
    Path notOurs = write(jobDir("a").resolve("README.md"), "notes");

    ReportStore after = new ReportStore(dataDir);

    assertThat(after.list("a")).containsExactly(StoredReport.of(good));
    assertThat(warnings()).containsExactlyInAnyOrder(
        "removed " + partial + ": a report write that never finished (the daemon stopped while writing it)",
        "removed " + partialMarkdown + ": a report write that never finished (the daemon stopped while writing it)",
        "removed " + markdownAlone + ": the Markdown of a report whose JSON was never written or was already removed",
        "removed " + probe + ": the write probe of a daemon that stopped while starting");
    assertThat(List.of(partial, partialMarkdown, markdownAlone, probe)).noneMatch(Files::exists);
    assertThat(notOurs).exists();
    assertThat(jobDir("a").resolve("a-000001.md")).exists();
    assertThat(after.get("a-000002")).isEmpty();
  }

  @Test
  void aStoredReportWithANullHeadlineIsSkippedWithAWarningNamingTheField() throws IOException {
    ReportStore before = new ReportStore(dataDir);
    Report good = saved(before, "a");
    Path nullHeadline = write(jobDir("a").resolve("a-000002.json"), ReportJson.write(good)
        .replace("a-000001", "a-000002").replaceFirst("\"headline\" : \"[^\"]*\"", "\"headline\" : null"));

    ReportStore after = new ReportStore(dataDir);

    assertThat(after.list("a")).containsExactly(StoredReport.of(good));
    assertThat(warnings()).containsExactly("skipping unreadable report file " + nullHeadline
        + ": not a frdiag report: field headline is missing or null");
    assertThat(after.nextReportId("a")).isEqualTo("a-000003");
  }

  @Test
  void unexpectedFilesInTheDataDirAreSkippedWithAWarningAndStartUpCarriesOn() throws IOException {
    ReportStore before = new ReportStore(dataDir);
    Report good = saved(before, "a");
    Path stray = write(jobDir("a").resolve("notes.txt"), "remember to look at rank 3");
    Path looseFile = write(dataDir.resolve("reports").resolve("a-000009.json"), "{}");
    Path badDir = Files.createDirectories(dataDir.resolve("reports").resolve(".hidden"));

    ReportStore after = new ReportStore(dataDir);

    assertThat(after.list("a")).containsExactly(StoredReport.of(good));
    assertThat(warnings()).containsExactlyInAnyOrder(
        "ignoring " + stray + ": not a report file",
        "ignoring " + looseFile + ": not a job's report directory",
        "ignoring " + badDir + ": not a job's report directory");
  }

  @Test
  void aReportWhoseFileIsDamagedAfterStartStaysListedAndReadingItSaysWhichFileAndWhy() throws IOException {
    ReportStore store = new ReportStore(dataDir);
    Report a1 = saved(store, "a");
    Report a2 = saved(store, "a");
    Report b1 = saved(store, "b");
    String json = Files.readString(store.pathOf(a1));
    write(store.pathOf(a1), json.substring(0, json.length() / 2));
    Files.delete(store.pathOf(b1));

    assertThatThrownBy(() -> store.get("a-000001")).isInstanceOf(ReportUnreadableException.class)
        .hasMessageStartingWith("report a-000001 is stored but its file " + store.pathOf(a1)
            + " cannot be read: not a frdiag report: ");
    assertThatThrownBy(() -> store.get("b-000001")).isInstanceOf(ReportUnreadableException.class)
        .hasMessage("report b-000001 is stored but its file " + store.pathOf(b1) + " cannot be read: the file is gone");
    // Nothing else is lost: the list, the other report, the next id.
    assertThat(store.list("a")).containsExactly(StoredReport.of(a2), StoredReport.of(a1));
    assertThat(store.get("a-000002")).contains(a2);
    assertThat(store.nextReportId("a")).isEqualTo("a-000003");
    assertThat(store.get("a-000009")).isEmpty();
  }

  @Test
  void aRestartReadsTheSummaryIndexAndReadsWholeOnlyTheFilesItDoesNotDescribe() throws IOException {
    ReportStore before = new ReportStore(dataDir);
    Report a1 = saved(before, "a");
    Report a2 = saved(before, "a");
    Report a3 = saved(before, "a");
    Report b1 = saved(before, "b");
    Path index = dataDir.resolve("reports").resolve(ReportStore.INDEX);
    assertThat(Files.readAllLines(index)).hasSize(4);
    // Since the index was written: one report removed, one written by another hand, one replaced by another
    // version, and the index's last line cut short by a stop in the middle of an append.
    Files.delete(before.pathOf(a1));
    Files.delete(jobDir("a").resolve("a-000001.md"));
    Report a4 = report("a-000004", "a");
    write(jobDir("a").resolve("a-000004.json"), ReportJson.write(a4));
    Report b1Again = ReportJson.read(ReportJson.write(b1).replace("rank 1 never issued", "rank 1 never ever issued"));
    write(before.pathOf(b1), ReportJson.write(b1Again));
    String lines = Files.readString(index);
    write(index, lines + lines.substring(0, 40));

    ReportStore after = new ReportStore(dataDir);

    assertThat(after.list("a")).containsExactly(StoredReport.of(a4), StoredReport.of(a3), StoredReport.of(a2));
    assertThat(after.list("b")).containsExactly(StoredReport.of(b1Again));
    assertThat(after.get("b-000001")).contains(b1Again);
    assertThat(warnings()).containsExactly("ignoring what is damaged in " + index + " (1 of its lines); those "
        + "reports were read from their files");
    // Written anew: one line per report stored, and a third start agrees without a warning.
    assertThat(Files.readAllLines(index)).hasSize(4);
    logged.list.clear();
    assertThat(new ReportStore(dataDir).list("a")).isEqualTo(after.list("a"));
    assertThat(warnings()).isEmpty();
  }

  @Test
  void withoutItsSummaryIndexTheStoreReadsEveryFileAndWritesTheIndexAgain() throws IOException {
    ReportStore before = new ReportStore(dataDir);
    Report a1 = saved(before, "a");
    Report a2 = saved(before, "a");
    Path index = dataDir.resolve("reports").resolve(ReportStore.INDEX);
    Files.delete(index);
    // A file changed since it was indexed is read whole, and refused like any other bad report.
    Path nullHeadline = before.pathOf(a2);

    ReportStore after = new ReportStore(dataDir);
    assertThat(after.list("a")).containsExactly(StoredReport.of(a2), StoredReport.of(a1));
    assertThat(Files.readAllLines(index)).hasSize(2);

    write(nullHeadline, ReportJson.write(a2).replaceFirst("\"headline\" : \"[^\"]*\"", "\"headline\" : null"));
    ReportStore again = new ReportStore(dataDir);
    assertThat(again.list("a")).containsExactly(StoredReport.of(a1));
    assertThat(warnings()).containsExactly("skipping unreadable report file " + nullHeadline
        + ": not a frdiag report: field headline is missing or null");
  }

  private static Path write(Path file, String content) throws IOException {
    return Files.writeString(file, content, StandardCharsets.UTF_8);
  }

  @Test
  void aDataDirWithNullASymlinkToDevZeroAFifoAndABadDateStillStartsAndServesTheGoodReports() throws Exception {
    ReportStore first = new ReportStore(dataDir);
    Report good = saved(first, "job");
    Path dir = jobDir("job");
    Files.writeString(dir.resolve("job-000002.json"), "null");
    Files.createSymbolicLink(dir.resolve("job-000003.json"), Path.of("/dev/zero"));
    Process mkfifo = new ProcessBuilder("mkfifo", dir.resolve("job-000004.json").toString()).start();
    assertThat(mkfifo.waitFor()).isZero();
    Files.writeString(dir.resolve("job-000005.json"), ReportJson.write(good)
        .replace("job-000001", "job-000005").replace("2026-01-02T03:04:05Z", "yesterday"));

    ReportStore restarted = new ReportStore(dataDir);

    assertThat(restarted.list("job")).extracting(StoredReport::reportId).containsExactly("job-000001");
    assertThat(restarted.get("job-000001")).isPresent();
    assertThat(warnings()).anySatisfy(w -> assertThat(w).contains("job-000002.json"))
        .anySatisfy(w -> assertThat(w).contains("job-000003.json").contains("not a regular file"))
        .anySatisfy(w -> assertThat(w).contains("job-000004.json").contains("not a regular file"))
        .anySatisfy(w -> assertThat(w).contains("job-000005.json"));
    assertThat(restarted.nextReportId("job")).as("never overwrites a damaged file").isEqualTo("job-000006");
  }

  @Test
  void aReportNumberAtTheEndOfTheRangeIsSkippedAndNewIdsStayFetchable() throws Exception {
    ReportStore first = new ReportStore(dataDir);
    Report good = saved(first, "job");
    Files.writeString(jobDir("job").resolve("job-2147483647.json"), ReportJson.write(good)
        .replace("job-000001", "job-2147483647"));
    Files.writeString(jobDir("job").resolve("job-99999999999999999999.json"), ReportJson.write(good)
        .replace("job-000001", "job-99999999999999999999"));

    ReportStore restarted = new ReportStore(dataDir);
    Report next = saved(restarted, "job");
    assertThat(restarted.get(next.reportId())).as("the new report %s", next.reportId()).isPresent();
    assertThat(restarted.list("job")).extracting(StoredReport::reportId).contains(next.reportId(), "job-000001");
  }

  @Test
  void aReportThatCannotBeWrittenIsKeptAnnouncedOnlyOnceOnDiskAndWrittenWhenSpaceReturns() {
    java.util.concurrent.atomic.AtomicBoolean full = new java.util.concurrent.atomic.AtomicBoolean(true);
    ReportStore store = new ReportStore(dataDir, (target, content) -> {
      if (full.get()) {
        throw new IOException("No space left on device");
      }
      ReportStore.writeDurably(target, content);
    });
    List<String> announced = new java.util.ArrayList<>();
    Report r = report(store.nextReportId("job"), "job");
    store.save(r, stored -> announced.add(stored.reportId()));

    assertThat(announced).as("not on disk, so not announced").isEmpty();
    assertThat(store.healthy()).isFalse();
    assertThat(store.pendingReports()).isEqualTo(1);
    assertThat(store.writeErrors()).isEqualTo(1);
    assertThat(warnings()).anySatisfy(w -> assertThat(w).contains("job-000001").contains("No space left on device"));
    assertThat(Files.exists(jobDir("job").resolve("job-000001.json"))).isFalse();

    store.retryPending();
    assertThat(announced).isEmpty();
    full.set(false);
    store.retryPending();

    assertThat(announced).containsExactly("job-000001");
    assertThat(store.healthy()).isTrue();
    assertThat(store.pendingReports()).isZero();
    assertThat(new ReportStore(dataDir).get("job-000001")).isPresent();
  }

  @Test
  void aReportIsOnDiskWholeOrNotAtAllWhenTheDiskFillsBetweenItsTwoFiles() throws IOException {
    java.util.concurrent.atomic.AtomicBoolean full = new java.util.concurrent.atomic.AtomicBoolean(true);
    ReportStore store = new ReportStore(dataDir, (target, content) -> {
      if (full.get() && target.toString().endsWith(".json")) {
        throw new IOException("No space left on device");
      }
      ReportStore.writeDurably(target, content);
    });
    Report r = report(store.nextReportId("job"), "job");
    store.save(r);

    assertThat(store.pendingReports()).isEqualTo(1);
    try (var files = Files.list(jobDir("job"))) {
      assertThat(files.map(f -> f.getFileName().toString())).as("neither file of the report").isEmpty();
    }

    full.set(false);
    store.retryPending();
    assertThat(jobDir("job").resolve("job-000001.md")).exists();
    assertThat(jobDir("job").resolve("job-000001.json")).exists();
  }

  @Test
  void aDataDirThatCannotBeWrittenIsNoticedAtStart() throws IOException {
    ReportStore store = new ReportStore(dataDir, (target, content) -> {
      throw new IOException("Read-only file system");
    });
    assertThat(store.healthy()).isFalse();
    assertThat(warnings()).anySatisfy(w -> assertThat(w).contains("cannot write").contains("Read-only file system"));
  }

  @Test
  void retentionRemovesTheOldestReportsAndNeverTheNewest() {
    java.time.Instant now = java.time.Instant.parse("2026-03-01T00:00:00Z");
    ReportStore store = new ReportStore(dataDir, ReportStore::writeDurably,
        new Retention(3, java.time.Duration.ofDays(365)), java.time.Clock.fixed(now, java.time.ZoneOffset.UTC));
    for (int i = 0; i < 5; i++) {
      saved(store, "job");
    }
    assertThat(store.list("job")).extracting(StoredReport::reportId).containsExactly("job-000005", "job-000004",
        "job-000003");
    assertThat(Files.exists(jobDir("job").resolve("job-000001.json"))).isFalse();
    assertThat(Files.exists(jobDir("job").resolve("job-000001.md"))).isFalse();
    assertThat(new ReportStore(dataDir).nextReportId("job")).as("numbers go on after removed reports")
        .isEqualTo("job-000006");

    // Every report here is from January: older than 30 days, but the newest stays.
    ReportStore aged = new ReportStore(dataDir.resolve("other"), ReportStore::writeDurably,
        new Retention(0, java.time.Duration.ofDays(30)), java.time.Clock.fixed(now, java.time.ZoneOffset.UTC));
    saved(aged, "job");
    saved(aged, "job");
    assertThat(aged.list("job")).extracting(StoredReport::reportId).containsExactly("job-000002");
  }
}
