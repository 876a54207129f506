package dev.frdiag.daemon.watchdog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.daemon.metrics.DaemonMetrics;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.registry.RankLink;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.report.Report;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A rank whose newest heartbeat said every record of its ring had reached the daemon, sent shortly before the
 * snapshot request, is not asked for a snapshot: its window stands for one. Any other silent rank is waited for until
 * the deadline.
 */
class SnapshotStandInTest {
  private static final Duration HEARTBEAT = Duration.ofSeconds(1);
  private static final long START = 1_800_000_000_000_000_000L;

  @TempDir
  Path dataDir;

  /** The investigator's clocks: wall time is START plus this, monotonic time is this. */
  private final AtomicLong nanos = new AtomicLong();
  private ScheduledExecutorService scheduler;
  private Investigator investigator;
  private Job job;

  @BeforeEach
  void start() {
    scheduler = Executors.newSingleThreadScheduledExecutor();
    investigator = new Investigator(new ReportStore(dataDir), Runnable::run, scheduler,
        () -> Instant.EPOCH.plusNanos(START + nanos.get()), nanos::get, Duration.ofSeconds(30), Limits.defaults(),
        new DaemonMetrics(), HEARTBEAT);
    job = new JobRegistry(16).getOrCreate("s", 3, 0);
  }

  @AfterEach
  void stop() {
    scheduler.shutdownNow();
  }

  /** Ranks asked for a snapshot, in the order asked. */
  private final List<Integer> asked = new java.util.concurrent.CopyOnWriteArrayList<>();

  /** Rank {@code rank} of the 3-rank job, answering snapshots only when {@code answers}. */
  private void attach(int rank, boolean answers) {
    RankLink link = request -> {
      asked.add(rank);
      if (answers) {
        job.dumpReply(rank, "s" + rank,
            DumpReply.newBuilder().setRequestId(request.getRequestId()).build());
      }
    };
    job.attach(RankIdentity.newBuilder().setJobId("s").setGlobalRank(rank).setWorldSize(3).setHostname("n")
        .setPid(rank).build(), List.of(ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1).addRanks(2)
        .setGlobalRankStride(1).build()), link, "s" + rank, 0, nanos.get(), 0);
  }

  private void heartbeat(int rank, long sentAgoNanos, boolean recordsCurrent) {
    job.heartbeat(rank, "s" + rank, List.of(ProcessGroupProgress.newBuilder().setProcessGroup("0")
        .setLastEnqueuedSeq(3).setLastCompletedSeq(2).build()), 0, START + nanos.get() - sentAgoNanos,
        recordsCurrent, nanos.get(), 0);
  }

  private static String line(Report report, String containing) {
    return report.timeline().stream().map(Report.TimelineEntry::event).filter(e -> e.contains(containing))
        .findFirst().orElseThrow();
  }

  @Test
  void aRankWhoseRecordsAllReachedTheDaemonJustBeforeTheRequestIsNotAskedNorWaitedFor() throws Exception {
    attach(0, true);
    attach(1, false);
    attach(2, true);
    heartbeat(1, HEARTBEAT.toNanos(), true);

    // No clock moves: the report comes once the two ranks asked have answered.
    Report report = investigator.investigate(job, Report.Trigger.ON_DEMAND, Duration.ofSeconds(60))
        .get(5, TimeUnit.SECONDS);
    assertThat(asked).containsExactlyInAnyOrder(0, 2);
    assertThat(line(report, "snapshots requested")).isEqualTo("snapshots requested from 2 connected ranks (deadline "
        + "60000 ms); the windows of 1 other ranks stand for theirs (every record had reached the daemon at most 2000"
        + " ms before)");
    assertThat(line(report, "snapshots received")).isEqualTo("2 of 2 snapshots received after 0 ms");

    RankEvidence stoodIn = job.evidence(Map.of(), Set.of(1), 0, Duration.ofSeconds(30), "no snapshot").ranks()
        .get(1);
    assertThat(stoodIn.answered()).isTrue();
    assertThat(stoodIn.missingReason()).isEmpty();
  }

  @Test
  void whenEveryWindowStandsInNoSnapshotIsRequestedAndTheReportSaysSo() throws Exception {
    for (int rank = 0; rank < 3; rank++) {
      attach(rank, true);
      heartbeat(rank, HEARTBEAT.toNanos(), true);
    }
    Report report = investigator.investigate(job, Report.Trigger.ON_DEMAND, Duration.ofSeconds(60))
        .get(5, TimeUnit.SECONDS);
    assertThat(asked).isEmpty();
    assertThat(report.timeline()).extracting(Report.TimelineEntry::event)
        .contains("no snapshot requested: the windows of 3 connected ranks stand for theirs (every record had "
            + "reached the daemon at most 2000 ms before)")
        .noneMatch(e -> e.contains("snapshots received"));
  }

  @Test
  void aRankWhoseHeartbeatDidNotSayItsRecordsWereCurrentOrWasTooOldIsWaitedForUntilTheDeadline()
      throws Exception {
    attach(0, true);
    attach(1, false);
    attach(2, false);
    heartbeat(1, HEARTBEAT.toNanos(), false);
    heartbeat(2, 3 * HEARTBEAT.toNanos(), true);
    assertThat(job.currentWindows(START + nanos.get() - 2 * HEARTBEAT.toNanos())).isEmpty();

    CompletableFuture<Report> report = investigator.investigate(job, Report.Trigger.ON_DEMAND,
        Duration.ofSeconds(60));
    nanos.addAndGet(Investigator.QUORUM_QUIET.toNanos());
    // Past any quorum's quiet, two of three ranks still owe a snapshot: the 60 s deadline holds.
    assertThat(asked).containsExactlyInAnyOrder(0, 1, 2);
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5)).until(() -> !report.isDone());
  }
}
