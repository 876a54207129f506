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
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
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

  /** A stored report's JSON with its id and headline (a JSON value) to fill in. */
  private static final String STORED = """
      {"schema": "frdiag.report/v1", "report_id": "%s", "job": "job1", "verdict": "HANG",
       "symptom": "CPU_STALL", "headline": %s, "culprit_ranks": [1], "confidence": 0.9,
       "created_at": "2026-01-02T03:04:05Z", "trigger": "stall", "recommendation": "look at rank 1"}
      """;
}
