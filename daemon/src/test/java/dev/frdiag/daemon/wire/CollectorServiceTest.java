package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.InProcessDaemon;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.ContextAck;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.GetJobStatusRequest;
import dev.frdiag.proto.v1.Goodbye;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.JobStatus;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.ProcessGroupUpdate;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.RankStatus;
import dev.frdiag.proto.v1.RecordBatch;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Collector service in-process: each message of the Connect stream, ReportContext, and how bad input is
 * refused.
 */
class CollectorServiceTest {
  @TempDir
  Path dataDir;

  private InProcessDaemon daemon;
  private ManagedChannel channel;

  @BeforeEach
  void start() {
    daemon = new InProcessDaemon(DaemonSettings.builder().dataDir(dataDir).maxMessageBytes(256 * 1024).build());
    channel = daemon.channel();
  }

  @AfterEach
  void stop() throws InterruptedException {
    daemon.close();
  }

  private static ProcessGroup world(int size) {
    ProcessGroup.Builder g = ProcessGroup.newBuilder().setName("0").setGlobalRankStart(0)
        .setGlobalRankStride(1);
    for (int r = 0; r < size; r++) {
      g.addRanks(r);
    }
    return g.build();
  }

  private static RankMessage hello(String job, int rank, int worldSize) {
    return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
        .setJobId(job).setGlobalRank(rank).setWorldSize(worldSize).setHostname("node0").setPid(1))
        .addProcessGroups(world(worldSize))).build();
  }

  /** Opens a stream, sends the messages, and returns how the daemon ended it. */
  private CompletableFuture<Status> stream(RankMessage... messages) {
    return RankConnection.send(channel, messages);
  }

  private void healthyJobIsConnected() {
    var status = DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
        .getJobStatus(GetJobStatusRequest.newBuilder().setJobId("good").build());
    assertThat(status.getSummary().getRanksConnected()).isEqualTo(1);
    assertThat(status.getSummary().getRanksLost()).isZero();
  }

  @Test
  void invalidHelloGetsInvalidArgumentAndOtherJobsCarryOn() throws Exception {
    stream(hello("good", 0, 1));
    await().atMost(Duration.ofSeconds(5)).ignoreExceptions().untilAsserted(this::healthyJobIsConnected);

    Status status = stream(hello("bad", 0, 0)).get(5, TimeUnit.SECONDS);
    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).isEqualTo("world_size 0 is outside 1..1048576");

    Status noHello = stream(RankMessage.newBuilder().setHeartbeat(Heartbeat.getDefaultInstance()).build())
        .get(5, TimeUnit.SECONDS);
    assertThat(noHello.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(noHello.getDescription()).contains("first message of a stream must be a Hello");

    Status badJobId = stream(hello("../etc", 0, 1)).get(5, TimeUnit.SECONDS);
    assertThat(badJobId.getDescription()).startsWith("invalid job_id '../etc'");

    healthyJobIsConnected();
  }

  @Test
  void recordForAnUnannouncedGroupIsRejected() throws Exception {
    RankMessage batch = RankMessage.newBuilder().setRecords(RecordBatch.newBuilder().addRecords(
        CollectiveRecord.newBuilder().setRecordId(1).setProcessGroup("nope").setOp("all_reduce")
            .setCollectiveSeq(1).setTimeCreatedNs(1))).build();
    Status status = stream(hello("liar", 0, 2), batch).get(5, TimeUnit.SECONDS);
    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).isEqualTo("record 1 names process group 'nope' that was never announced");
  }

  @Test
  void oversizedMessageGetsResourceExhaustedAndOtherJobsCarryOn() throws Exception {
    stream(hello("good", 0, 1));
    await().atMost(Duration.ofSeconds(5)).ignoreExceptions().untilAsserted(this::healthyJobIsConnected);
    RankMessage huge = RankMessage.newBuilder().setRecords(RecordBatch.newBuilder().addRecords(
        CollectiveRecord.newBuilder().setRecordId(1).setProcessGroup("0").setOp("x".repeat(512 * 1024))
            .setTimeCreatedNs(1))).build();
    Status status = stream(hello("big", 0, 1), huge).get(5, TimeUnit.SECONDS);
    assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription()).contains("exceeds the daemon's limit of 262144 bytes");
    healthyJobIsConnected();
  }

  @Test
  void bytesThatAreNotAProtobufMessageGetAnErrorStatusAndOtherJobsCarryOn() throws Exception {
    stream(hello("good", 0, 1));
    await().atMost(Duration.ofSeconds(5)).ignoreExceptions().untilAsserted(this::healthyJobIsConnected);
    MethodDescriptor<byte[], byte[]> raw = MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.BIDI_STREAMING)
        .setFullMethodName(CollectorGrpc.getConnectMethod().getFullMethodName())
        .setRequestMarshaller(new Bytes()).setResponseMarshaller(new Bytes()).build();
    ClientCall<byte[], byte[]> call = channel.newCall(raw, CallOptions.DEFAULT);
    CompletableFuture<Status> closed = new CompletableFuture<>();
    call.start(new ClientCall.Listener<>() {
      @Override
      public void onClose(Status status, Metadata trailers) {
        closed.complete(status);
      }
    }, new Metadata());
    call.request(1);
    call.sendMessage(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x01, 0x02});
    Status status = closed.get(5, TimeUnit.SECONDS);
    assertThat(status.isOk()).isFalse();
    healthyJobIsConnected();
  }

  /** A rank connection the daemon has welcomed. */
  private RankConnection connected(String job, int rank, int worldSize) throws InterruptedException {
    RankConnection r = new RankConnection(channel).send(hello(job, rank, worldSize));
    assertThat(r.next().hasWelcome()).isTrue();
    return r;
  }

  private JobStatus status(String job) {
    return DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
        .getJobStatus(GetJobStatusRequest.newBuilder().setJobId(job).setIncludeRanks(true).build());
  }

  private static CollectiveRecord allReduce(long id, long seq) {
    return CollectiveRecord.newBuilder().setRecordId(id).setProcessGroup("0").setOp("all_reduce")
        .setCollectiveSeq(seq).setTimeCreatedNs(1_000 + id).build();
  }

  @Test
  void helloIsWelcomedWithASessionAndTheHeartbeatIntervalToUse() throws Exception {
    RankConnection rank = new RankConnection(channel).send(hello("job", 0, 2));
    DaemonMessage first = rank.next();
    assertThat(first.getWelcome().getSessionId()).isNotEmpty();
    assertThat(first.getWelcome().getConfig().getHeartbeatIntervalMs())
        .isEqualTo(DaemonSettings.DEFAULT_HEARTBEAT_INTERVAL.toMillis());
    assertThat(status("job").getRanksList()).extracting(RankStatus::getGlobalRank, RankStatus::getLiveness)
        .containsExactly(tuple(0, RankStatus.Liveness.CONNECTED));
    assertThat(status("job").getSummary().getWorldSize()).isEqualTo(2);
  }

  @Test
  void theSchedulerNamesOfAHelloAreKeptForTheJobsReports() throws Exception {
    RankMessage h = hello("job", 0, 1);
    new RankConnection(channel).send(h.toBuilder().setHello(h.getHello().toBuilder()
        .putScheduler("slurm.job_id", "4242").putScheduler("slurm.restart_count", "1")).build()).next();

    assertThat(daemon.daemon().registry().find("job").orElseThrow().scheduler())
        .isEqualTo(Map.of("slurm.job_id", "4242", "slurm.restart_count", "1"));
  }

  @Test
  void recordsAndHeartbeatsBecomeTheRanksWindowProgressAndDropCount() throws Exception {
    RankConnection rank = connected("job", 0, 1);
    rank.send(RankMessage.newBuilder().setRecords(RecordBatch.newBuilder().addRecords(allReduce(1, 1))
        .addRecords(allReduce(2, 2)).setDroppedRecords(3)).build());
    ProcessGroupProgress progress = ProcessGroupProgress.newBuilder().setProcessGroup("0").setLastEnqueuedSeq(2)
        .setLastCompletedSeq(1).build();
    rank.send(RankMessage.newBuilder().setHeartbeat(Heartbeat.newBuilder().addProgress(progress)
        .setDroppedRecords(7)).build());

    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
      RankEvidence held = daemon.daemon().registry().find("job").orElseThrow()
          .evidence(Map.of(), 0, Duration.ofSeconds(1), "not asked").ranks().get(0);
      assertThat(held.records()).containsExactly(allReduce(1, 1), allReduce(2, 2));
      assertThat(held.progress()).containsExactly(progress);
      assertThat(status("job").getRanks(0).getDroppedRecords()).isEqualTo(7);
    });
  }

  @Test
  void goodbyeMarksTheRankFinished() throws Exception {
    RankConnection rank = connected("job", 0, 1);
    rank.send(RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("training done")).build());
    rank.close();
    assertThat(rank.end()).isEqualTo(Status.OK);
    JobSummary summary = status("job").getSummary();
    assertThat(summary.getRanksFinished()).isEqualTo(1);
    assertThat(summary.getRanksLost()).isZero();
    assertThat(status("job").getRanks(0).getLiveness()).isEqualTo(RankStatus.Liveness.FINISHED);
  }

  @Test
  void streamClosedWithoutGoodbyeMarksTheRankLost() throws Exception {
    RankConnection rank = connected("job", 0, 1);
    rank.close();
    assertThat(rank.end()).isEqualTo(Status.OK);
    assertThat(status("job").getSummary().getRanksLost()).isEqualTo(1);
    assertThat(status("job").getRanks(0).getLiveness()).isEqualTo(RankStatus.Liveness.LOST);
  }

  @Test
  void cancelledStreamMarksTheRankLost() throws Exception {
    RankConnection rank = connected("job", 0, 1);
    rank.fail(new IllegalStateException("process killed"));
    await().atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(status("job").getSummary().getRanksLost()).isEqualTo(1));
  }

  @Test
  void secondHelloOnTheSameStreamIsRefused() throws Exception {
    Status status = connected("job", 0, 1).send(hello("job", 0, 1)).end();
    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).isEqualTo("a stream carries one Hello; open a new stream instead");
    assertThat(status("job").getSummary().getRanksLost()).isEqualTo(1);
  }

  @Test
  void messageWithNoBodyIsRefused() throws Exception {
    Status status = connected("job", 0, 1).send(RankMessage.getDefaultInstance()).end();
    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).isEqualTo("empty or unknown message body");
  }

  @Test
  void rankThatContradictsTheJobsWorldSizeIsRefused() throws Exception {
    connected("job", 0, 2);
    Status status = new RankConnection(channel).send(hello("job", 1, 4)).end();
    assertThat(status.getCode()).as("retryable: the claim is accepted once the live ranks are gone")
        .isEqualTo(Status.Code.ABORTED);
    assertThat(status.getDescription()).isEqualTo("rank 1 says world size 4 but job job has world size 2 with 1 "
        + "live ranks; refused while they are connected");
  }

  @Test
  void dumpRequestReachesTheRankAndItsReplyIsWhatTheReportAnalyses() throws Exception {
    RankMessage h = hello("job", 0, 1);
    RankConnection rank = new RankConnection(channel).send(h.toBuilder().setHello(h.getHello().toBuilder()
        .putScheduler("slurm.job_id", "4242")).build());
    assertThat(rank.next().hasWelcome()).isTrue();
    CompletableFuture<ReportEnvelope> report = new CompletableFuture<>();
    DiagnosisGrpc.newStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS).diagnoseNow(
        DiagnoseNowRequest.newBuilder().setJobId("job").setSnapshotDeadlineMs(10_000).build(),
        new StreamObserver<>() {
          @Override
          public void onNext(ReportEnvelope value) {
            report.complete(value);
          }

          @Override
          public void onError(Throwable t) {
            report.completeExceptionally(t);
          }

          @Override
          public void onCompleted() {
          }
        });

    DumpRequest request = rank.next().getDumpRequest();
    assertThat(request.getReason()).isEqualTo("frdiag: diagnosis requested");
    assertThat(request.getDeadlineMs()).isEqualTo(10_000);
    rank.send(RankMessage.newBuilder().setDumpReply(DumpReply.newBuilder().setRequestId(request.getRequestId())
        .addRecords(allReduce(1, 1))).build());

    Report stored = ReportJson.read(report.get(20, TimeUnit.SECONDS).getReportJson());
    assertThat(stored.timeline()).extracting(Report.TimelineEntry::event)
        .anySatisfy(e -> assertThat(e).startsWith("1 of 1 snapshots received"));
    assertThat(stored.scheduler()).as("the job as the Hello named it").isEqualTo(Map.of("slurm.job_id", "4242"));
  }

  @Test
  void dumpReplyWithAnInvalidRecordIsRefused() throws Exception {
    RankConnection rank = connected("job", 0, 1);
    Status status = rank.send(RankMessage.newBuilder().setDumpReply(DumpReply.newBuilder().setRequestId(1)
        .addRecords(allReduce(5, 1).toBuilder().setOp(""))).build()).end();
    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).isEqualTo("record 5 has no op name");
  }

  @Test
  void processGroupsAnnouncedLaterAreAcceptedAndBadOnesRefused() throws Exception {
    RankConnection rank = connected("job", 0, 2);
    ProcessGroup pair = ProcessGroup.newBuilder().setName("1").addRanks(0).addRanks(1).setGlobalRankStride(1).build();
    rank.send(RankMessage.newBuilder().setProcessGroups(ProcessGroupUpdate.newBuilder().addProcessGroups(pair))
        .build());
    rank.send(RankMessage.newBuilder().setRecords(RecordBatch.newBuilder().addRecords(allReduce(1, 1).toBuilder()
        .setProcessGroup("1"))).build());
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(daemon.daemon().registry().find("job")
        .orElseThrow().evidence(Map.of(), 0, Duration.ofSeconds(1), "").ranks().get(0).records()).hasSize(1));

    Status status = rank.send(RankMessage.newBuilder().setProcessGroups(ProcessGroupUpdate.newBuilder()
        .addProcessGroups(pair.toBuilder().setName("2").setGlobalRankStride(2))).build()).end();
    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).isEqualTo("process group '2' says start/stride 0/2 but its members give 0/1");
  }

  @Test
  void nodeContextIsAcknowledgedAndAMalformedOneRefused() {
    var stub = CollectorGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);
    assertThat(stub.reportContext(NodeContext.newBuilder().setJobId("job").setHostname("node0").build()))
        .isEqualTo(ContextAck.getDefaultInstance());

    assertThatThrownBy(() -> stub.reportContext(NodeContext.newBuilder().setJobId("job").build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription()).isEqualTo("hostname must be 1-255 characters");
        });
    assertThatThrownBy(() -> stub.reportContext(NodeContext.newBuilder().setJobId("").setHostname("n").build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription()).isEqualTo("invalid job_id ''");
        });
  }

  /** Passes bytes through untouched, so a test can send what no well-behaved client would. */
  private static final class Bytes implements MethodDescriptor.Marshaller<byte[]> {
    @Override
    public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try {
        return stream.readAllBytes();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}
