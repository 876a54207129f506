package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.recorder.OpName;
import dev.frdiag.collector.recorder.ProcessGroupHandle;
import dev.frdiag.collector.recorder.TensorList;
import dev.frdiag.collector.reporter.Reporter;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.InProcessDaemon;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.report.ReportJson;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetReportRequest;
import dev.frdiag.proto.v1.ListReportsRequest;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.testing.incidents.IncidentWatch;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DaemonRestartTest {
  @TempDir
  Path dataDir;

  private Daemon start() {
    return new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .stallTimeout(Duration.ofSeconds(60)).build()).start();
  }

  @Test
  void storedReportsSurviveARestart() throws Exception {
    String reportId;
    String json;
    try (Daemon daemon = start()) {
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
      // Both ranks' clocks read 120 s ago, so the op rank 0 issued has been outstanding longer than the 60 s
      // stall timeout without the test waiting; the watchdog itself (which times from arrival) stays quiet, so
      // the only report is the one asked for.
      FlightRecorder[] recorders = new FlightRecorder[2];
      ProcessGroupHandle[] world = new ProcessGroupHandle[2];
      Reporter[] reporters = new Reporter[2];
      for (int r = 0; r < 2; r++) {
        recorders[r] = new FlightRecorder(64, () -> FlightRecorder.epochNanos() - 120_000_000_000L, 600_000);
        world[r] = recorders[r].registerProcessGroup("0", "default_pg", new int[] {0, 1});
        reporters[r] = Reporter.builder(recorders[r], RankIdentity.newBuilder().setJobId("job1").setGlobalRank(r)
            .setWorldSize(2).setHostname("node0").setPid(100 + r).build(), channel).start();
      }
      // Rank 0 issues an all_reduce and its device starts it; rank 1 never issues it.
      OpName allReduce = recorders[0].op("all_reduce");
      TensorList t = recorders[0].tensors(new long[][] {{1024}}, "Float");
      recorders[0].started(recorders[0].enqueue(world[0], allReduce, t, t, null));
      await().atMost(Duration.ofSeconds(10)).until(() -> reporters[0].isConnected() && reporters[1].isConnected());

      ReportEnvelope report = DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS)
          .diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId("job1").build());
      assertThat(report.getSummary().getVerdict()).isEqualTo(Verdict.HANG);
      assertThat(report.getSummary().getSymptom()).isEqualTo(Symptom.CPU_STALL);
      assertThat(report.getSummary().getCulpritRanksList()).containsExactly(1);
      reportId = report.getSummary().getReportId();
      json = report.getReportJson();
      for (Reporter r : reporters) {
        r.close();
      }
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    try (Daemon restarted = start()) {
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", restarted.port()).usePlaintext()
          .build();
      try {
        var stub = DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);
        assertThat(stub.getReport(GetReportRequest.newBuilder().setReportId(reportId).build()).getReportJson())
            .isEqualTo(json);
        assertThat(stub.listReports(ListReportsRequest.newBuilder().setJobId("job1").build()).getReportsList())
            .extracting(s -> s.getReportId()).containsExactly(reportId);
        assertThat(restarted.store().nextReportId("job1")).isEqualTo("job1-000002");
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void aStoredReportWithANullHeadlineIsSkippedAndEveryReadOfItsJobStillWorks() throws Exception {
    ReportStore store = new ReportStore(dataDir);
    String good = store.nextReportId("job1");
    store.save(ReportJson.read(STORED.formatted(good, "\"rank 1 never issued all_reduce #3 on pg 0\"")));
    Path jobDir = dataDir.resolve("reports").resolve("job1");
    Files.writeString(jobDir.resolve("job1-000002.json"), STORED.formatted("job1-000002", "null"));

    try (InProcessDaemon restarted = new InProcessDaemon(DaemonSettings.builder().dataDir(dataDir).build())) {
      var stub = DiagnosisGrpc.newBlockingStub(restarted.channel()).withDeadlineAfter(5, TimeUnit.SECONDS);
      assertThat(stub.listReports(ListReportsRequest.newBuilder().setJobId("job1").build()).getReportsList())
          .extracting(s -> s.getReportId()).containsExactly(good);
      assertThat(stub.getReport(GetReportRequest.newBuilder().setReportId(good).build()).getSummary().getHeadline())
          .isEqualTo("rank 1 never issued all_reduce #3 on pg 0");
      assertThatThrownBy(() -> stub.getReport(GetReportRequest.newBuilder().setReportId("job1-000002").build()))
          .isInstanceOfSatisfying(StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND));
    }
  }

  /**
   * A 64-rank job whose rank 5's GPU stalls, streaming to a daemon with a 2 s stall timeout that is restarted under
   * it. The ranks of the second host onwards cannot come back at once (a network that takes them longer): while
   * they are away, the restarted daemon makes no verdict, for it would blame them for a hang whose cause is rank 5;
   * once they are back it reports rank 5.
   */
  @Test
  void afterARestartNoVerdictIsMadeUntilTheRanksConnectedBeforeAreBack() throws Exception {
    Duration stallTimeout = Duration.ofSeconds(2);
    Daemon first = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .stallTimeout(stallTimeout).snapshotDeadline(Duration.ofSeconds(2)).build()).start();
    int port = first.port();
    Gate gate = new Gate();
    ManagedChannel direct = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    ManagedChannel gated = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().intercept(gate).build();
    Daemon second = null;
    try (RankSimulator sim = RankSimulator.builder().topology(Topology.builder().worldSize(64).ranksPerHost(8)
        .build()).fault(Fault.gpuStall(5, 10)).jobId("restarted").channel(direct)
        .rankChannels(r -> r < 8 ? direct : gated).stepInterval(Duration.ofMillis(10))
        .reporterSettings(ReporterSettings.builder().heartbeatInterval(Duration.ofMillis(200))
            .maxBatchDelay(Duration.ofMillis(50)).backoff(Duration.ofMillis(100), Duration.ofSeconds(1)).build())
        .build()) {
      BlockingQueue<ReportEnvelope> before = IncidentWatch.of(direct, "restarted");
      assertThat(sim.awaitConnected(Duration.ofSeconds(30))).isTrue();
      sim.start();
      assertGpuStallOfRank5(before.poll(60, TimeUnit.SECONDS));

      gate.close();
      first.close();
      second = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(port).dataDir(dataDir)
          .stallTimeout(stallTimeout).snapshotDeadline(Duration.ofSeconds(2)).build()).start();
      BlockingQueue<ReportEnvelope> after = IncidentWatch.of(direct, "restarted");
      Daemon restarted = second;
      await().atMost(Duration.ofSeconds(30)).until(() -> restarted.registry().find("restarted")
          .map(j -> j.summary().getRanksConnected() == 8).orElse(false));

      assertThat(java.util.Optional.ofNullable(after.poll(3 * stallTimeout.toMillis(), TimeUnit.MILLISECONDS))
          .map(ReportEnvelope::getSummary)).as("a verdict while ranks 8-63, connected before the restart, are not back")
          .isEmpty();
      gate.open();
      assertGpuStallOfRank5(after.poll(60, TimeUnit.SECONDS));
    } finally {
      direct.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      gated.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      first.close();
      if (second != null) {
        second.close();
      }
    }
  }

  private static void assertGpuStallOfRank5(ReportEnvelope report) {
    assertThat(report).as("a report within 60 s").isNotNull();
    assertThat(report.getSummary().getVerdict()).isEqualTo(Verdict.HANG);
    assertThat(report.getSummary().getSymptom()).as(report.getSummary().getHeadline()).isEqualTo(Symptom.GPU_STALL);
    assertThat(report.getSummary().getCulpritRanksList()).containsExactly(5);
  }

  /** Fails every new call at once while closed, as a network that does not let a host through yet. */
  private static final class Gate implements ClientInterceptor {
    private volatile boolean open = true;

    void close() {
      open = false;
    }

    void open() {
      open = true;
    }

    @Override
    public <Q, A> ClientCall<Q, A> interceptCall(MethodDescriptor<Q, A> method, CallOptions options, Channel next) {
      if (open) {
        return next.newCall(method, options);
      }
      return new ClientCall<>() {
        @Override
        public void start(Listener<A> listener, Metadata headers) {
          listener.onClose(Status.UNAVAILABLE.withDescription("this host cannot reach the daemon yet"),
              new Metadata());
        }

        @Override
        public void request(int n) {
        }

        @Override
        public void cancel(String message, Throwable cause) {
        }

        @Override
        public void halfClose() {
        }

        @Override
        public void sendMessage(Q message) {
        }
      };
    }
  }

  /** A stored report's JSON with its id and headline (a JSON value) to fill in. */
  private static final String STORED = """
      {"schema": "frdiag.report/v1", "report_id": "%s", "job": "job1", "verdict": "HANG",
       "symptom": "CPU_STALL", "headline": %s, "culprit_ranks": [1], "confidence": 0.9,
       "created_at": "2026-01-02T03:04:05Z", "trigger": "stall", "recommendation": "look at rank 1"}
      """;
}
