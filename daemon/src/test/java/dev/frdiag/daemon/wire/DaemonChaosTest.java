package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.Evidence;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.daemon.ForkedDaemon;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetReportRequest;
import dev.frdiag.proto.v1.ListReportsRequest;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.ReportSummary;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.proto.v1.WatchIncidentsRequest;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fr-daemon} in a process of its own, SIGKILLed by its pid ten times at random moments while it writes
 * reports, and restarted on the same data dir and port each time, while the simulated ranks of a job whose rank 5's
 * GPU has stalled stream to it and reconnect: every report it announced (returned by DiagnoseNow or pushed to a
 * watcher) is read back whole, nothing a write left half-done stays in the data dir, and no report blames a rank that
 * was only reconnecting.
 */
class DaemonChaosTest {
  private static final int ROUNDS = 10;
  private static final String JOB = "chaos";

  @TempDir
  Path dataDir;

  private ForkedDaemon start(int port) throws IOException {
    return ForkedDaemon.start("256m", dataDir, "--port", Integer.toString(port), "--stall-timeout", "2s",
        "--snapshot-deadline", "2s", "--diagnose-interval", "1ms", "--metrics-port", "-1", "--web-port", "-1",
        // Restarted ten times on the test's two cores: rehearsing incidents at each start would take 40 s of them.
        "--warm-up-rounds", "0");
  }

  @Test
  void everyAnnouncedReportSurvivesTenSigkillsAndNoneBlamesARankThatWasReconnecting() throws Exception {
    long seed = System.nanoTime();
    Random random = new Random(seed);
    Set<String> announced = ConcurrentHashMap.newKeySet();
    ForkedDaemon daemon = start(0);
    int port = daemon.port();
    // The test's calls and each host's ranks on connections of their own: after a restart, the second host's
    // connection comes back when its own backoff says, later than the first's, as hosts of a real job do.
    ManagedChannel channel = daemon.channel();
    ManagedChannel firstHost = daemon.channel();
    ManagedChannel secondHost = daemon.channel();
    Topology topology = Topology.defaults();
    try (RankSimulator sim = RankSimulator.builder().topology(topology).fault(Fault.gpuStall(5, 10))
        .jobId(JOB).channel(channel).rankChannels(r -> topology.hostOf(r).equals(topology.hostOf(0)) ? firstHost
            : secondHost).stepInterval(Duration.ofMillis(10))
        .reporterSettings(ReporterSettings.builder().heartbeatInterval(Duration.ofMillis(200))
            .maxBatchDelay(Duration.ofMillis(50)).backoff(Duration.ofMillis(100), Duration.ofSeconds(1)).build())
        .build()) {
      CountDownLatch hung = new CountDownLatch(1);
      Context.CancellableContext first = Context.current().withCancellation();
      first.run(() -> watch(channel, announced, hung));
      assertThat(sim.awaitConnected(Duration.ofSeconds(30))).isTrue();
      sim.start();
      // Diagnosed on demand before the stall timeout, the job is rightly found making progress: the chaos starts
      // once the daemon has reported the hang by itself.
      assertThat(hung.await(60, TimeUnit.SECONDS)).as("the hang reported").isTrue();
      first.cancel(null);
      for (int round = 0; round < ROUNDS; round++) {
        String at = "seed " + seed + " round " + round;
        AtomicBoolean running = new AtomicBoolean(true);
        CountDownLatch reportsFlowing = new CountDownLatch(1);
        Context.CancellableContext watching = Context.current().withCancellation();
        watching.run(() -> watch(channel, announced, reportsFlowing));
        Thread driver = new Thread(() -> {
          while (running.get()) {
            try {
              ReportEnvelope e = DiagnosisGrpc.newBlockingStub(channel).withWaitForReady()
                  .withDeadlineAfter(20, TimeUnit.SECONDS)
                  .diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId(JOB).build());
              announced.add(e.getSummary().getReportId());
              reportsFlowing.countDown();
            } catch (RuntimeException notAnnounced) {
              // The daemon just died, or is not up yet: that report was never announced.
            }
          }
        }, "diagnose-now");
        driver.start();
        try {
          if (round > 0) {
            // What the daemon killed last round wrote, read back while it takes diagnoses again: asked as soon as
            // it is up, as an operator's tooling would.
            assertEveryReportWholeAndNoneFalse(channel, announced, "seed " + seed + " round " + (round - 1));
          }
          // The kill lands at a random moment while reports are being made and written: once the first of this
          // round is announced (after a restart, once every rank is back), within the next second.
          assertThat(reportsFlowing.await(60, TimeUnit.SECONDS)).as("%s: a report was announced", at).isTrue();
          assertThat(daemon.exitsWithin(Duration.ofMillis(random.nextInt(1000))))
              .as("%s: the daemon runs until killed", at).isFalse();
          daemon.kill();
        } finally {
          running.set(false);
          driver.join(TimeUnit.SECONDS.toMillis(30));
          watching.cancel(null);
        }
        if (round == ROUNDS - 1) {
          // The ranks leave while the daemon is down: nothing is written after the last restart.
          sim.close();
        }
        daemon = start(port);
        // The test's connection and the first host's try again at once, rather than after the backoff the dead
        // daemon made them grow; the second host's waits it out.
        channel.resetConnectBackoff();
        firstHost.resetConnectBackoff();
        assertNothingHalfWritten(at);
      }
      assertEveryReportWholeAndNoneFalse(channel, announced, "seed " + seed + " after the last restart");
      assertThat(announced).as("seed %d: reports were made between the kills", seed).hasSizeGreaterThan(ROUNDS);
    } finally {
      for (ManagedChannel c : List.of(channel, firstHost, secondHost)) {
        c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
      daemon.close();
    }
    assertNothingHalfWritten("seed " + seed + " after a clean stop");
  }

  /** Pushes every report the daemon announces to a watcher into {@code announced}. */
  private static void watch(ManagedChannel channel, Set<String> announced, CountDownLatch flowing) {
    DiagnosisGrpc.newStub(channel).watchIncidents(WatchIncidentsRequest.newBuilder().setJobId(JOB).build(),
        new StreamObserver<>() {
          @Override
          public void onNext(ReportEnvelope e) {
            announced.add(e.getSummary().getReportId());
            flowing.countDown();
          }

          @Override
          public void onError(Throwable t) {
          }

          @Override
          public void onCompleted() {
          }
        });
  }

  /**
   * Every announced report reads back whole, and every report served, announced or not, is the job's hang as it is:
   * rank 5's GPU stall, with no rank said to be lost (none was: ranks only reconnected).
   */
  private static void assertEveryReportWholeAndNoneFalse(ManagedChannel channel, Set<String> announced, String at) {
    // A deadline for each call, not one for the list: on a loaded machine the list outlasts any one.
    java.util.function.Supplier<DiagnosisGrpc.DiagnosisBlockingStub> stub = () -> DiagnosisGrpc
        .newBlockingStub(channel).withWaitForReady().withDeadlineAfter(30, TimeUnit.SECONDS);
    // As of now: reports announced while these are read are read next time.
    Set<String> sofar = Set.copyOf(announced);
    for (String id : sofar) {
      ReportEnvelope e = stub.get().getReport(GetReportRequest.newBuilder().setReportId(id).build());
      assertThat(ReportJson.read(e.getReportJson()).reportId()).as("%s: %s", at, id).isEqualTo(id);
    }
    List<ReportSummary> served = stub.get().listReports(ListReportsRequest.newBuilder().setJobId(JOB).build())
        .getReportsList();
    assertThat(served).as(at).extracting(ReportSummary::getReportId).containsAll(sofar);
    for (ReportSummary s : served) {
      Report r = ReportJson.read(stub.get().getReport(GetReportRequest.newBuilder().setReportId(s.getReportId())
          .build()).getReportJson());
      assertThat(r.verdict()).as("%s: %s %s", at, r.reportId(), r.headline()).isEqualTo(Verdict.HANG);
      assertThat(r.symptom()).as("%s: %s %s", at, r.reportId(), r.headline()).isEqualTo(Symptom.GPU_STALL);
      assertThat(r.culpritRanks()).as("%s: %s %s", at, r.reportId(), r.headline()).containsExactly(5);
      assertThat(r.evidence()).as("%s: %s blames no rank for being lost", at, r.reportId())
          .noneMatch(e -> e.kind() == Evidence.Kind.RANK_LOST);
    }
  }

  /** No temporary file anywhere in the data dir, and no report's Markdown without its JSON. */
  private void assertNothingHalfWritten(String at) throws IOException {
    try (Stream<Path> files = Files.walk(dataDir)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        String name = f.getFileName().toString();
        assertThat(name).as("%s: %s", at, f).doesNotEndWith(".tmp");
        if (name.endsWith(".md")) {
          assertThat(f.resolveSibling(name.replaceFirst("\\.md$", ".json"))).as("%s: the JSON beside %s", at, f)
              .exists();
        }
      }
    }
  }
}
