package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.DaemonSettings;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetJobStatusRequest;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.RecordBatch;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CollectorServiceTest {
  @TempDir
  Path dataDir;

  private Daemon daemon;
  private ManagedChannel channel;

  @BeforeEach
  void start() {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .maxMessageBytes(256 * 1024).build()).start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
  }

  @AfterEach
  void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
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
    CompletableFuture<Status> ended = new CompletableFuture<>();
    StreamObserver<RankMessage> out = CollectorGrpc.newStub(channel).connect(new StreamObserver<>() {
      @Override
      public void onNext(DaemonMessage value) {
      }

      @Override
      public void onError(Throwable t) {
        ended.complete(Status.fromThrowable(t));
      }

      @Override
      public void onCompleted() {
        ended.complete(Status.OK);
      }
    });
    for (RankMessage m : messages) {
      out.onNext(m);
    }
    return ended;
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
