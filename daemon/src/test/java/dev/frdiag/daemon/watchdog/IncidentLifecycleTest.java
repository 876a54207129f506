package dev.frdiag.daemon.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.registry.Incident;
import dev.frdiag.daemon.registry.Incident.Phase;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.daemon.store.ReportStore;
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
    Investigator investigator = new Investigator(store, analysis::add, scheduler,
        () -> Instant.EPOCH.plusNanos(nanos.get()), nanos::get, STALL);
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

  private void attach(Job job, int rank, dev.frdiag.daemon.registry.RankLink link) {
    job.attach(RankIdentity.newBuilder().setJobId("job").setGlobalRank(rank).setWorldSize(2).setHostname("node0")
        .setPid(100 + rank).build(), List.of(WORLD), link, "s" + rank, 0, nanos.get(), 0);
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
