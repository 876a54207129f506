package dev.frdiag.daemon.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.daemon.store.StoredReport;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * When the watchdog opens an incident and when it lets one go, on a clock the test moves. Every investigation runs
 * on the calling thread and every rank answers its dump request at once, so a pass of the watchdog leaves its
 * report on disk before it returns.
 */
class WatchdogTest {
  private static final Duration STALL = Duration.ofSeconds(30);
  private static final Duration HEARTBEAT = Duration.ofSeconds(15);
  private static final Duration GRACE = Duration.ofSeconds(10);
  /** Monotonic clocks start anywhere. */
  private static final long ORIGIN = 7_654_321_000_000L;
  private static final ProcessGroup WORLD = ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1)
      .setGlobalRankStride(1).build();

  @TempDir
  Path dataDir;

  private final AtomicLong nanos = new AtomicLong(ORIGIN);
  /** How long the messages the daemon has not read yet have waited, as its transport's pool would say. */
  private final AtomicLong intakeLag = new AtomicLong();
  /** Tasks run on the analysis thread: building evidence ahead, and investigations. */
  private final AtomicInteger analysisTasks = new AtomicInteger();
  private final JobRegistry registry = new JobRegistry(64);
  private ScheduledExecutorService scheduler;
  private ReportStore store;
  private Investigator investigator;
  private Watchdog watchdog;
  private Job job;

  @BeforeEach
  void start() {
    scheduler = Executors.newSingleThreadScheduledExecutor();
    store = new ReportStore(dataDir);
    investigator = new Investigator(store, task -> {
      analysisTasks.incrementAndGet();
      task.run();
    }, scheduler, () -> Instant.EPOCH.plusNanos(nanos.get()),
        nanos::get, STALL);
    // No straggler analyses: these tests count the analysis tasks a hang's watch starts.
    DaemonSettings settings = DaemonSettings.builder().dataDir(dataDir).stallTimeout(STALL)
        .heartbeatTimeout(HEARTBEAT).lostGrace(GRACE).stragglerInterval(Duration.ZERO).build();
    watchdog = new Watchdog(registry, investigator, settings, nanos::get, intakeLag::get, scheduler);
    job = registry.getOrCreate("job", 2, 0);
    for (int rank = 0; rank < 2; rank++) {
      int r = rank;
      job.attach(RankIdentity.newBuilder().setJobId("job").setGlobalRank(r).setWorldSize(2).setHostname("node0")
              .setPid(100 + r).build(), List.of(WORLD),
          request -> job.dumpReply(r, "session" + r, DumpReply.newBuilder()
              .setRequestId(request.getRequestId()).build()),
          "session" + r, 0, nanos.get(), 0);
    }
  }

  @AfterEach
  void stop() {
    watchdog.close();
  }

  private void at(Duration sinceStart) {
    nanos.set(ORIGIN + sinceStart.toNanos());
  }

  private static ProcessGroupProgress progress(long enqueued, long completed) {
    return ProcessGroupProgress.newBuilder().setProcessGroup("0").setLastEnqueuedSeq(enqueued)
        .setLastCompletedSeq(completed).build();
  }

  /** Both ranks heartbeat with the given progress (none when null), then the watchdog looks; returns when next. */
  private Duration tick(Duration sinceStart, ProcessGroupProgress progress, int... silentRanks) {
    at(sinceStart);
    for (int rank = 0; rank < 2; rank++) {
      if (!contains(silentRanks, rank)) {
        job.heartbeat(rank, "session" + rank, progress == null ? List.of() : List.of(progress), 0, 0, false,
            nanos.get(), 0);
      }
    }
    return watchdog.checkAll();
  }

  private static boolean contains(int[] values, int value) {
    for (int v : values) {
      if (v == value) {
        return true;
      }
    }
    return false;
  }

  /** The trigger of every report written, oldest first, as the report's JSON states it. */
  private List<String> triggers() {
    List<String> out = new ArrayList<>();
    for (StoredReport stored : store.list("job")) {
      Report r = store.read(stored);
      try {
        out.add(0, new ObjectMapper().readTree(ReportJson.write(r)).get("trigger").asText());
      } catch (java.io.IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return out;
  }

  @Test
  void stalledGroupOpensAnIncidentOnceTheStallTimeoutHasPassedAndNotBefore() {
    ProcessGroupProgress stuck = progress(5, 4);
    tick(Duration.ZERO, stuck);
    tick(Duration.ofSeconds(10), stuck);
    tick(Duration.ofSeconds(20), stuck);
    tick(STALL.minusNanos(1), stuck);
    assertThat(triggers()).isEmpty();
    assertThat(job.incident().isOpen()).isFalse();

    tick(STALL, stuck);
    assertThat(triggers()).containsExactly("stall");
    assertThat(job.incident().isOpen()).isTrue();
    assertThat(job.summary().getLatestReportId()).isEqualTo("job-000001");
  }

  @Test
  void aGroupNearingTheStallTimeoutIsLookedAtAgainWithinATenthOfASecond() {
    Duration interval = DaemonSettings.builder().dataDir(dataDir).stallTimeout(STALL).build().checkInterval();
    ProcessGroupProgress stuck = progress(5, 4);
    assertThat(tick(Duration.ZERO, stuck)).isEqualTo(interval);
    assertThat(tick(Duration.ofSeconds(20), stuck)).as("10 s to go").isEqualTo(interval);
    assertThat(tick(STALL.minus(interval), stuck)).as("one interval to go").isEqualTo(Watchdog.NEAR_STALL_CHECK);
    assertThat(tick(STALL.minusMillis(100), stuck)).isEqualTo(Watchdog.NEAR_STALL_CHECK);
    assertThat(triggers()).isEmpty();
    assertThat(tick(STALL, stuck)).as("the incident is open: nothing nears a stall").isEqualTo(interval);
    assertThat(triggers()).containsExactly("stall");
    assertThat(tick(STALL.plusSeconds(1), progress(5, 5))).as("progress again, nothing outstanding")
        .isEqualTo(interval);
  }

  @Test
  void aJobsEvidenceIsBuiltAheadOnceEachTimeAGroupNearsTheStallTimeout() {
    Duration interval = DaemonSettings.builder().dataDir(dataDir).stallTimeout(STALL).build().checkInterval();
    ProcessGroupProgress stuck = progress(5, 4);
    tick(Duration.ZERO, stuck);
    tick(Duration.ofSeconds(20), stuck);
    tick(STALL.minus(interval.multipliedBy(Watchdog.BUILD_AHEAD_INTERVALS)).minusMillis(1), stuck);
    assertThat(analysisTasks).as("farther from the timeout than the build-ahead intervals").hasValue(0);
    tick(STALL.minus(interval.multipliedBy(Watchdog.BUILD_AHEAD_INTERVALS)), stuck);
    assertThat(analysisTasks).as("built as the group comes that close").hasValue(1);
    tick(STALL.minus(interval), stuck);
    tick(STALL.minusMillis(200), stuck);
    tick(STALL.minusMillis(100), stuck);
    assertThat(analysisTasks).as("once for the approach").hasValue(1);
    tick(STALL.minusMillis(50), progress(6, 5));
    tick(STALL.plus(STALL).minus(interval), progress(6, 5));
    assertThat(analysisTasks).as("progress, then a second approach").hasValue(2);
    assertThat(triggers()).isEmpty();
  }

  @Test
  void groupWithNoOutstandingWorkNeverStalls() {
    ProcessGroupProgress idle = progress(5, 5);
    for (int s = 0; s <= 4 * STALL.toSeconds(); s += 10) {
      tick(Duration.ofSeconds(s), idle);
    }
    assertThat(triggers()).isEmpty();
  }

  @Test
  void jobHasOneIncidentAtATimeWhateverElseGoesWrong() {
    ProcessGroupProgress stuck = progress(5, 4);
    tick(Duration.ZERO, stuck);
    tick(STALL, stuck);
    assertThat(triggers()).containsExactly("stall");

    job.event(1, "session1", RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_TIMEOUT).build(), nanos.get());
    job.lost(1, "session1", nanos.get());
    for (int s = 40; s <= 600; s += 10) {
      tick(Duration.ofSeconds(s), stuck, 1);
    }
    assertThat(triggers()).containsExactly("stall");
    assertThat(job.incident().isOpen()).isTrue();
  }

  @Test
  void stallIncidentClosesWhenProgressResumesAndTheNextStallIsReportedAgain() {
    tick(Duration.ZERO, progress(5, 4));
    tick(STALL, progress(5, 4));
    // Quiet does not close a stall: only progress does.
    for (int s = 40; s <= 120; s += 10) {
      tick(Duration.ofSeconds(s), progress(5, 4));
    }
    assertThat(job.incident().isOpen()).isTrue();

    tick(Duration.ofSeconds(130), progress(6, 5));
    assertThat(job.incident().isOpen()).isFalse();
    tick(Duration.ofSeconds(140), progress(6, 5));
    tick(Duration.ofSeconds(150), progress(6, 5));
    tick(Duration.ofSeconds(160).minusNanos(1), progress(6, 5));
    assertThat(triggers()).containsExactly("stall");

    tick(Duration.ofSeconds(160), progress(6, 5));
    assertThat(triggers()).containsExactly("stall", "stall");
  }

  @Test
  void rankWhoseStreamEndedOpensAnIncidentAfterTheGraceAndNotBefore() {
    tick(Duration.ZERO, null);
    at(Duration.ofSeconds(1));
    job.lost(1, "session1", nanos.get());
    tick(Duration.ofSeconds(1).plus(GRACE).minusNanos(1), null, 1);
    assertThat(triggers()).isEmpty();

    tick(Duration.ofSeconds(1).plus(GRACE), null, 1);
    assertThat(triggers()).containsExactly("rank_lost");
  }

  @Test
  void aJobKilledWithoutGoodbyesIsOneIncidentNotOnePerStallTimeout() {
    tick(Duration.ZERO, null);
    at(Duration.ofSeconds(1));
    job.lost(0, "session0", nanos.get());
    job.lost(1, "session1", nanos.get());
    for (int s = 1; s <= 20; s++) {
      tick(Duration.ofSeconds(1).plus(GRACE).plus(STALL.multipliedBy(s)), null, 0, 1);
    }
    assertThat(triggers()).containsExactly("rank_lost");

    // The rank comes back and is lost again: that is a new loss, and a new incident.
    at(Duration.ofMinutes(30));
    job.attach(RankIdentity.newBuilder().setJobId("job").setGlobalRank(1).setWorldSize(2).setHostname("node0")
        .setPid(201).build(), List.of(WORLD), request -> { }, "session1b", 0, nanos.get(), 0);
    job.lost(1, "session1b", nanos.get());
    for (int s = 1; s <= 5; s++) {
      tick(Duration.ofMinutes(30).plus(GRACE).plus(STALL.multipliedBy(s)), null, 0, 1);
    }
    assertThat(triggers()).containsExactly("rank_lost", "rank_lost");
  }

  @Test
  void silentRankCountsAsLostAfterTheHeartbeatTimeoutAndOpensAnIncidentAfterTheGrace() {
    tick(Duration.ZERO, null);
    tick(HEARTBEAT, null, 1);
    assertThat(job.summary().getRanksLost()).isZero();

    Duration noticed = HEARTBEAT.plusMillis(1);
    tick(noticed, null, 1);
    assertThat(job.summary().getRanksLost()).isEqualTo(1);
    tick(noticed.plus(GRACE).minusNanos(1), null, 1);
    assertThat(triggers()).isEmpty();

    tick(noticed.plus(GRACE), null, 1);
    assertThat(triggers()).containsExactly("heartbeat_lost");
  }

  @Test
  void aDaemonBehindItsIntakeJudgesSilenceOnlyUpToTheMessagesItHasRead() {
    tick(Duration.ZERO, null);
    // Rank 1's heartbeats wait in the daemon's queue: it has read nothing that arrived in the last 20 s.
    intakeLag.set(Duration.ofSeconds(20).toNanos());
    for (Duration t = Duration.ofSeconds(1); t.compareTo(HEARTBEAT.plus(GRACE).plusSeconds(5)) <= 0;
        t = t.plusSeconds(1)) {
      tick(t, null, 1);
    }
    assertThat(job.summary().getRanksLost()).as("silent only by the daemon's clock").isZero();
    assertThat(triggers()).isEmpty();

    // Caught up, and still nothing from rank 1: now its silence is a fact.
    intakeLag.set(0);
    Duration caughtUp = HEARTBEAT.plus(GRACE).plusSeconds(6);
    tick(caughtUp, null, 1);
    assertThat(job.summary().getRanksLost()).isEqualTo(1);
    tick(caughtUp.plus(GRACE), null, 1);
    assertThat(triggers()).containsExactly("heartbeat_lost");
  }

  @Test
  void silentRankThatSpeaksAgainWithinTheGraceWasSlowNotLost() {
    tick(Duration.ZERO, null);
    tick(HEARTBEAT.plusMillis(1), null, 1);
    assertThat(job.summary().getRanksLost()).isEqualTo(1);

    tick(HEARTBEAT.plusSeconds(5), null);
    assertThat(job.summary().getRanksLost()).isZero();
    tick(HEARTBEAT.plus(GRACE).plusSeconds(5), null);
    assertThat(triggers()).isEmpty();
  }

  @Test
  void rankEventOpensAnIncidentAtTheNextLook() {
    tick(Duration.ZERO, null);
    job.event(1, "session1", RankEvent.newBuilder().setKind(RankEvent.Kind.COMM_ERROR).setMessage("NCCL error").build(),
        nanos.get());
    assertThat(triggers()).isEmpty();
    tick(Duration.ofMillis(1), null);
    assertThat(triggers()).containsExactly("comm_error");
  }

  @Test
  void eventIncidentClosesAQuietPeriodAfterItsReportSoTheJobsNextHangIsReported() {
    tick(Duration.ZERO, null);
    job.event(1, "session1", RankEvent.newBuilder().setKind(RankEvent.Kind.COMM_ERROR).build(), nanos.get());
    tick(Duration.ofSeconds(1), null);
    assertThat(triggers()).containsExactly("comm_error");

    // Another event while the report is fresh belongs to the same hang.
    tick(Duration.ofSeconds(10), null);
    job.event(0, "session0", RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_TIMEOUT).build(), nanos.get());
    tick(Duration.ofSeconds(20), null);
    tick(Duration.ofSeconds(1).plus(STALL).minusNanos(1), null);
    assertThat(job.incident().isOpen()).isTrue();

    tick(Duration.ofSeconds(1).plus(STALL), null);
    assertThat(job.incident().isOpen()).isFalse();
    tick(Duration.ofSeconds(40), null);
    assertThat(triggers()).containsExactly("comm_error");

    job.event(0, "session0", RankEvent.newBuilder().setKind(RankEvent.Kind.CUDA_ERROR).build(), nanos.get());
    tick(Duration.ofSeconds(41), null);
    assertThat(triggers()).containsExactly("comm_error", "cuda_error");
  }
}
