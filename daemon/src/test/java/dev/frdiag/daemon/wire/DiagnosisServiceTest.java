package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.daemon.InProcessDaemon;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetJobStatusRequest;
import dev.frdiag.proto.v1.GetReportRequest;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.proto.v1.ListJobsRequest;
import dev.frdiag.proto.v1.ListReportsRequest;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.ReportSummary;
import dev.frdiag.proto.v1.WatchIncidentsRequest;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Diagnosis service in-process: what users and tools ask, and the errors they get for what does not exist. */
class DiagnosisServiceTest {
  @TempDir
  Path dataDir;

  private InProcessDaemon daemon;
  private DiagnosisGrpc.DiagnosisBlockingStub diagnosis;

  @BeforeEach
  void start() {
    // These tests diagnose one job several times in a row; the rate limit has tests of its own.
    daemon = new InProcessDaemon(DaemonSettings.builder().dataDir(dataDir)
        .limits(Limits.builder().diagnoseInterval(Duration.ZERO).build()).build());
    diagnosis = DiagnosisGrpc.newBlockingStub(daemon.channel()).withDeadlineAfter(20, TimeUnit.SECONDS);
  }

  @AfterEach
  void stop() throws InterruptedException {
    daemon.close();
  }

  /** Connects rank 0 of a one-rank job, which never answers dump requests; returns once it is welcomed. */
  private StreamObserver<RankMessage> connect(String job) throws Exception {
    CompletableFuture<DaemonMessage> welcome = new CompletableFuture<>();
    StreamObserver<RankMessage> out = CollectorGrpc.newStub(daemon.channel()).connect(new StreamObserver<>() {
      @Override
      public void onNext(DaemonMessage value) {
        welcome.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        welcome.completeExceptionally(t);
      }

      @Override
      public void onCompleted() {
      }
    });
    out.onNext(RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
        .setJobId(job).setWorldSize(1).setHostname("node0").setPid(1)).addProcessGroups(ProcessGroup.newBuilder()
        .setName("0").addRanks(0).setGlobalRankStride(1))).build());
    assertThat(welcome.get(5, TimeUnit.SECONDS).hasWelcome()).isTrue();
    return out;
  }

  /** A diagnosis that does not wait for the (silent) rank beyond a moment. */
  private ReportEnvelope diagnoseNow(String job) {
    return diagnosis.diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId(job).setSnapshotDeadlineMs(50).build());
  }

  private static void assertStatus(ThrowingCallable call, Status.Code code, String description) {
    assertThatThrownBy(call).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
      assertThat(e.getStatus().getCode()).isEqualTo(code);
      assertThat(e.getStatus().getDescription()).isEqualTo(description);
    });
  }

  @Test
  void listJobsNamesEveryJobInIdOrder() throws Exception {
    assertThat(diagnosis.listJobs(ListJobsRequest.getDefaultInstance()).getJobsList()).isEmpty();
    connect("zeta");
    connect("alpha");
    assertThat(diagnosis.listJobs(ListJobsRequest.getDefaultInstance()).getJobsList())
        .extracting(JobSummary::getJobId, JobSummary::getRanksConnected)
        .containsExactly(tuple("alpha", 1), tuple("zeta", 1));
  }

  @Test
  void diagnoseNowStoresAReportThatListReportsAndGetReportReturn() throws Exception {
    connect("job");
    ReportEnvelope first = diagnoseNow("job");
    ReportEnvelope second = diagnoseNow("job");

    assertThat(first.getSummary().getReportId()).isEqualTo("job-000001");
    assertThat(second.getSummary().getReportId()).isEqualTo("job-000002");
    Report report = ReportJson.read(first.getReportJson());
    assertThat(report.job()).isEqualTo("job");
    assertThat(report.timeline()).extracting(Report.TimelineEntry::event)
        .anySatisfy(e -> assertThat(e).matches("0 of 1 snapshots received after \\d+ ms"));

    assertThat(diagnosis.listReports(ListReportsRequest.newBuilder().setJobId("job").build()).getReportsList())
        .extracting(ReportSummary::getReportId).containsExactly("job-000002", "job-000001");
    assertThat(diagnosis.getReport(GetReportRequest.newBuilder().setReportId("job-000001").build()))
        .isEqualTo(first);
    assertThat(diagnosis.getJobStatus(GetJobStatusRequest.newBuilder().setJobId("job").build()).getSummary()
        .getLatestReportId()).isEqualTo("job-000002");
  }

  @Test
  void aReportWhoseFileWasDamagedSinceItWasWrittenIsDataLossAndTheOthersStillServe() throws Exception {
    connect("job");
    diagnoseNow("job");
    ReportEnvelope second = diagnoseNow("job");
    java.nio.file.Files.writeString(dataDir.resolve("reports/job/job-000001.json"), "null");

    assertStatus(() -> diagnosis.getReport(GetReportRequest.newBuilder().setReportId("job-000001").build()),
        Status.Code.DATA_LOSS, "report job-000001 is stored, but its file can no longer be read; the daemon's log "
            + "says why");
    assertThat(diagnosis.listReports(ListReportsRequest.newBuilder().setJobId("job").build()).getReportsList())
        .extracting(ReportSummary::getReportId).containsExactly("job-000002", "job-000001");
    assertThat(diagnosis.getReport(GetReportRequest.newBuilder().setReportId("job-000002").build()))
        .isEqualTo(second);
  }

  @Test
  void unknownJobIsNotFoundForEveryQuestionAboutIt() {
    String described = "unknown job 'nosuchjob'";
    assertStatus(() -> diagnosis.getJobStatus(GetJobStatusRequest.newBuilder().setJobId("nosuchjob").build()),
        Status.Code.NOT_FOUND, described);
    assertStatus(() -> diagnosis.listReports(ListReportsRequest.newBuilder().setJobId("nosuchjob").build()),
        Status.Code.NOT_FOUND, described);
    assertStatus(() -> diagnoseNow("nosuchjob"), Status.Code.NOT_FOUND, described);
  }

  @Test
  void unknownReportIsNotFoundAndALongIdIsAbbreviated() {
    assertStatus(() -> diagnosis.getReport(GetReportRequest.newBuilder().setReportId("job-000009").build()),
        Status.Code.NOT_FOUND, "no report 'job-000009'");
    assertStatus(() -> diagnosis.getReport(GetReportRequest.newBuilder().setReportId("x".repeat(100)).build()),
        Status.Code.NOT_FOUND, "no report '" + "x".repeat(64) + "…'");
  }

  @Test
  void watchIncidentsStreamsTheReportsOfTheWatchedJobOnly() throws Exception {
    connect("watched");
    connect("other");
    BlockingQueue<ReportEnvelope> incidents = new LinkedBlockingQueue<>();
    Context.CancellableContext watch = Context.current().withCancellation();
    try {
      watch.run(() -> DiagnosisGrpc.newStub(daemon.channel()).watchIncidents(
          WatchIncidentsRequest.newBuilder().setJobId("watched").build(), new StreamObserver<>() {
            @Override
            public void onNext(ReportEnvelope value) {
              incidents.add(value);
            }

            @Override
            public void onError(Throwable t) {
            }

            @Override
            public void onCompleted() {
            }
          }));
      // The server registers the watch after the call arrives; until a report shows up, it may not have.
      await().atMost(Duration.ofSeconds(20)).until(() -> {
        diagnoseNow("watched");
        return !incidents.isEmpty();
      });
      ReportEnvelope other = diagnoseNow("other");
      ReportEnvelope watched = diagnoseNow("watched");
      await().atMost(Duration.ofSeconds(5)).until(() -> incidents.stream()
          .anyMatch(e -> e.getSummary().getReportId().equals(watched.getSummary().getReportId())));
      assertThat(incidents).extracting(e -> e.getSummary().getJobId()).containsOnly("watched");
      assertThat(other.getSummary().getJobId()).isEqualTo("other");
      assertThat(incidents.stream().filter(e -> e.getSummary().getReportId().equals(watched.getSummary()
          .getReportId())).findFirst().orElseThrow()).isEqualTo(watched);
    } finally {
      watch.cancel(null);
    }
  }
}
