package dev.frdiag.daemon.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.fleet.Fleet;
import dev.frdiag.daemon.fleet.FleetSettings;
import dev.frdiag.daemon.registry.Incident;
import dev.frdiag.daemon.registry.Incident.Phase;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.report.Report;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An incident's whole life, read off the one object that holds it (the job's {@link Incident}) while the watchdog
 * scans on a clock the test moves: watched as a stall nears (its evidence built ahead), opened, its snapshots
 * gathered, analysed, reported, closed when the job makes progress again, and expired with its job. The analysis
 * thread is the test's own queue, so each phase between the gather and the report can be looked at.
 */
class IncidentLifecycleTest {
  private static final Duration STALL = Duration.ofSeconds(30);
  private static final Duration EXPIRY = Duration.ofMinutes(10);
  /** Monotonic clocks start anywhere. */
  private static final long ORIGIN = 1_234_567_000_000L;
  private static final ProcessGroup WORLD = ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1)
      .setGlobalRankStride(1).build();

  @TempDir
  Path dataDir;

  private final AtomicLong nanos = new AtomicLong(ORIGIN);
  /** The analysis thread's work, run when the test says. */
  private final Queue<Runnable> analysis = new ArrayDeque<>();
  private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();

  @AfterEach
  void stop() {
    scheduler.shutdownNow();
  }

  @Test
  void anIncidentIsWatchedOpenedGatheredAnalysedReportedClosedAndExpiredInOneObject() {
    JobRegistry registry = new JobRegistry(64, Limits.builder().jobIdleExpiry(EXPIRY).build());
    ReportStore store = new ReportStore(dataDir);
    Investigator investigator = investigator(store);
    DaemonSettings settings = DaemonSettings.builder().dataDir(dataDir).stallTimeout(STALL)
        .stragglerInterval(Duration.ZERO).build();
    Watchdog watchdog = new Watchdog(registry, investigator, settings, nanos::get, () -> 0, scheduler);
    Job job = registry.getOrCreate("job", 2, 0, nanos.get());
    // Rank 0 answers a dump request at once; rank 1 when the test says.
    AtomicReference<DumpRequest> askedOfRank1 = new AtomicReference<>();
    attach(job, 0, request -> job.dumpReply(0, "s0", DumpReply.newBuilder().setRequestId(request.getRequestId())
        .build()));
    attach(job, 1, askedOfRank1::set);
    Incident incident = job.incident();

    ProcessGroupProgress stuck = progress(5, 4);
    heartbeats(job, Duration.ZERO, stuck);
    watchdog.checkAll();
    assertThat(incident.phase()).isEqualTo(Phase.QUIET);

    Duration interval = settings.checkInterval();
    heartbeats(job, STALL.minus(interval.multipliedBy(Watchdog.BUILD_AHEAD_INTERVALS)), stuck);
    watchdog.checkAll();
    assertThat(incident.phase()).as("near the stall timeout: watched, not open").isEqualTo(Phase.QUIET);
    assertThat(analysis).as("its evidence built ahead, on the analysis thread").hasSize(1);
    analysis.poll().run();

    heartbeats(job, STALL, stuck);
    watchdog.checkAll();
    assertThat(incident.phase()).as("rank 1 has not answered").isEqualTo(Phase.GATHERING);
    assertThat(incident.trigger()).isEqualTo(Report.Trigger.STALL);
    assertThat(askedOfRank1.get()).as("every rank asked for its snapshot").isNotNull();

    job.dumpReply(1, "s1", DumpReply.newBuilder().setRequestId(askedOfRank1.get().getRequestId()).build());
    assertThat(incident.phase()).as("every rank answered; the analysis is queued").isEqualTo(Phase.ANALYSING);
    assertThat(store.list("job")).isEmpty();

    analysis.poll().run();
    assertThat(incident.phase()).isEqualTo(Phase.REPORTED);
    assertThat(store.list("job")).singleElement().satisfies(stored -> {
      Report report = store.read(stored);
      assertThat(report.trigger()).isEqualTo(Report.Trigger.STALL);
      assertThat(report.timeline()).extracting(Report.TimelineEntry::event)
          .anySatisfy(e -> assertThat(e).startsWith("2 of 2 snapshots received"));
    });
    assertThat(job.summary().getIncidentOpen()).isTrue();

    heartbeats(job, STALL.plusSeconds(5), progress(6, 5));
    watchdog.checkAll();
    assertThat(incident.phase()).as("the stalled group advanced again").isEqualTo(Phase.QUIET);
    assertThat(job.summary().getIncidentOpen()).isFalse();

    for (int rank = 0; rank < 2; rank++) {
      job.finished(rank, "s" + rank);
    }
    nanos.set(ORIGIN + STALL.plusSeconds(5).plus(EXPIRY).toNanos());
    watchdog.checkAll();
    assertThat(incident.phase()).as("no rank connected for the idle expiry").isEqualTo(Phase.EXPIRED);
    assertThat(registry.find("job")).isEmpty();
    assertThat(store.list("job")).as("its report stays").hasSize(1);
  }

  /**
   * A stall that ends by itself (rank 1 saving a checkpoint for half a minute while rank 0 waits in the next
   * collective): its report is rewritten to say when the job moved again and how long it stood still, it offers
   * nothing to drain or exclude, its sinks hear of it again, and fleet memory stops counting its host (DIAGNOSIS.md
   * §3, "A stall that ends by itself"). Written once more, not added: the job keeps one report of the incident, on
   * disk as in memory.
   */
  @Test
  void aStallThatEndsByItselfIsReportedAsRecoveredNotAsAHang() {
    ReportStore store = new ReportStore(dataDir);
    Investigator investigator = investigator(store);
    List<Report> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
    investigator.addSink(heard::add);
    Fleet fleet = new Fleet(FleetSettings.defaults(), java.time.Clock.fixed(Instant.EPOCH, java.time.ZoneOffset.UTC));
    investigator.addSink(fleet);
    JobRegistry registry = new JobRegistry(64, Limits.builder().jobIdleExpiry(EXPIRY).build());
    Watchdog watchdog = watchdog(registry, investigator);
    Job job = stalledAndReported(registry, watchdog);
    Report hang = store.read(store.list("job").get(0));
    assertThat(hang.verdict().name() + " " + hang.symptom() + " " + hang.culpritRanks())
        .isEqualTo("HANG CPU_STALL [1]");
    assertThat(fleet.standings(j -> true, true, null, 1)).as("the hang counted on rank 1's host")
        .anySatisfy(s -> assertThat(s.part().host()).isEqualTo("node1"));

    heartbeat(job, 1, STALL.plusSeconds(2), progress(6, 6));
    heartbeat(job, 0, STALL.plusSeconds(2), progress(6, 6));
    watchdog.checkAll();
    assertThat(job.incident().phase()).isEqualTo(Phase.QUIET);
    assertThat(analysis).as("the report's rewrite, on the analysis thread").hasSize(1);
    analysis.poll().run();

    Instant movedAgain = Instant.EPOCH.plusNanos(ORIGIN + STALL.plusSeconds(2).toNanos());
    assertThat(store.list("job")).as("one report of the incident, rewritten").hasSize(1);
    Report recovered = store.read(store.list("job").get(0));
    assertThat(recovered.reportId()).isEqualTo(hang.reportId());
    assertThat(recovered.recoveredAt()).isEqualTo(movedAgain);
    assertThat(recovered.headline()).startsWith("Recovered by itself after standing still");
    assertThat(recovered.exclude()).isEmpty();
    assertThat(recovered.recommendation()).startsWith("Nothing to drain or exclude");
    assertThat(recovered.timeline().get(recovered.timeline().size() - 1).event())
        .startsWith("recovered: every group that had stalled advanced again; the job stood still");
    assertThat(heard).extracting(Report::recoveredAt).containsExactly(null, movedAgain);
    assertThat(fleet.standings(j -> true, true, null, 1)).as("a slowdown, not a hang of node1").isEmpty();
    assertThat(new ReportStore(dataDir).list("job")).as("as the next start reads it")
        .singleElement().satisfies(s -> assertThat(s.recoveredAt()).isEqualTo(movedAgain));
    assertThat(new Fleet(FleetSettings.defaults(), java.time.Clock.fixed(Instant.EPOCH, java.time.ZoneOffset.UTC))
        .rebuild(new ReportStore(dataDir)).standings(j -> true, true, null, 1)).isEmpty();
  }

  /** A job that moves again only once a rank's process was replaced did not recover by itself: its report stands. */
  @Test
  void aStallThatEndsInARestartStaysAHang() {
    ReportStore store = new ReportStore(dataDir);
    JobRegistry registry = new JobRegistry(64, Limits.builder().jobIdleExpiry(EXPIRY).build());
    Watchdog watchdog = watchdog(registry, investigator(store));
    Job job = stalledAndReported(registry, watchdog);
    assertThat(store.list("job")).singleElement().satisfies(r -> assertThat(r.verdict().name()).isEqualTo("HANG"));

    nanos.set(ORIGIN + STALL.plusSeconds(20).toNanos());
    job.lost(1, "s1", nanos.get());
    job.attach(RankIdentity.newBuilder().setJobId("job").setGlobalRank(1).setWorldSize(2).setHostname("node1")
        .setPid(999).build(), List.of(WORLD), request -> { }, "s1b", 0, nanos.get(), 0);
    job.heartbeat(1, "s1b", List.of(progress(6, 6)), 0, 0, false, nanos.get(), 0);
    heartbeat(job, 0, STALL.plusSeconds(21), progress(6, 6));
    watchdog.checkAll();

    assertThat(job.incident().phase()).isEqualTo(Phase.QUIET);
    assertThat(analysis).as("no rewrite").isEmpty();
    assertThat(store.read(store.list("job").get(0)).recoveredAt()).isNull();
  }

  /** The investigator of the incidents, its analysis run on the test's queue, on the test's clock. */
  private Investigator investigator(ReportStore store) {
    return new Investigator(store, analysis::add, scheduler, () -> Instant.EPOCH.plusNanos(nanos.get()), nanos::get,
        STALL);
  }

  /** The watchdog over {@code registry}, on the test's clock, with no straggler analysis. */
  private Watchdog watchdog(JobRegistry registry, Investigator investigator) {
    return new Watchdog(registry, investigator, DaemonSettings.builder().dataDir(dataDir).stallTimeout(STALL)
        .stragglerInterval(Duration.ZERO).build(), nanos::get, () -> 0, scheduler);
  }

  /**
   * A two-rank job whose rank 1 stops short of all_reduce #5, where rank 0 waits, for the stall timeout; returned
   * once the incident's report (a CPU stall of rank 1) is written.
   */
  private Job stalledAndReported(JobRegistry registry, Watchdog watchdog) {
    Job job = registry.getOrCreate("job", 2, 0, nanos.get());
    attachAnsweringWithRings(job);
    for (Duration at : List.of(Duration.ZERO, STALL)) {
      heartbeat(job, 0, at, progress(5, 4));
      heartbeat(job, 1, at, progress(4, 4));
    }
    watchdog.checkAll();
    analysis.poll().run();
    return job;
  }

  /**
   * Both ranks, each answering a dump request with its ring: rank 0 completed all_reduce #1-#4 and waits in #5, rank
   * 1 completed #1-#4 and never issued #5.
   */
  private void attachAnsweringWithRings(Job job) {
    for (int rank = 0; rank < 2; rank++) {
      int r = rank;
      attach(job, rank, request -> {
        DumpReply.Builder reply = DumpReply.newBuilder().setRequestId(request.getRequestId());
        for (int seq = 1; seq <= (r == 0 ? 5 : 4); seq++) {
          reply.addRecords(CollectiveRecord.newBuilder().setRecordId(seq).setProcessGroup("0").setOp("all_reduce")
              .setCollectiveSeq(seq).setTimeCreatedNs(1_000_000L * seq).setState(seq == 5 ? CollectiveState.STARTED
                  : CollectiveState.COMPLETED).build());
        }
        job.dumpReply(r, "s" + r, reply.build());
      });
    }
  }

  private void attach(Job job, int rank, dev.frdiag.daemon.registry.RankLink link) {
    job.attach(RankIdentity.newBuilder().setJobId("job").setGlobalRank(rank).setWorldSize(2).setHostname("node" + rank)
        .setPid(100 + rank).build(), List.of(WORLD), link, "s" + rank, 0, nanos.get(), 0);
  }

  /** Rank {@code rank} heartbeats with {@code progress} at {@code sinceStart}. */
  private void heartbeat(Job job, int rank, Duration sinceStart, ProcessGroupProgress progress) {
    nanos.set(ORIGIN + sinceStart.toNanos());
    job.heartbeat(rank, "s" + rank, List.of(progress), 0, 0, false, nanos.get(), 0);
  }

  /** Both ranks heartbeat with {@code progress} at {@code sinceStart}. */
  private void heartbeats(Job job, Duration sinceStart, ProcessGroupProgress progress) {
    nanos.set(ORIGIN + sinceStart.toNanos());
    for (int rank = 0; rank < 2; rank++) {
      job.heartbeat(rank, "s" + rank, List.of(progress), 0, 0, false, nanos.get(), 0);
    }
  }

  private static ProcessGroupProgress progress(long enqueued, long completed) {
    return ProcessGroupProgress.newBuilder().setProcessGroup("0").setLastEnqueuedSeq(enqueued)
        .setLastCompletedSeq(completed).build();
  }
}
