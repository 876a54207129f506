package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.InProcessDaemon;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonFrame;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetJobStatusRequest;
import dev.frdiag.proto.v1.Goodbye;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.proto.v1.NodeDownload;
import dev.frdiag.proto.v1.NodeUpload;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankFrame;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.StreamClosed;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Rank streams carried on one node stream: each is served, and fails, exactly as its own Connect stream would. */
class NodeStreamTest {
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

  @Test
  void eachRankOnANodeStreamIsWelcomedOnItsOwnFrame() throws Exception {
    Node node = new Node();
    node.send(message(10, hello(0)), message(11, hello(1)));
    assertThat(node.next(10).getMessage().hasWelcome()).isTrue();
    assertThat(node.next(11).getMessage().hasWelcome()).isTrue();
    assertThat(summary().getRanksConnected()).isEqualTo(2);
  }

  @Test
  void aRankThatBreaksTheRulesLosesOnlyItsOwnStream() throws Exception {
    Node node = twoRanksConnected();

    node.send(message(1, hello(1)));
    DaemonFrame refused = node.next(1);
    assertThat(refused.getClosed().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
    assertThat(refused.getClosed().getDescription()).isEqualTo("a stream carries one Hello; open a new stream instead");

    JobSummary after = summary();
    assertThat(after.getRanksConnected()).isEqualTo(1);
    assertThat(after.getRanksLost()).isEqualTo(1);
  }

  @Test
  void aRankMessageOverTheLimitIsRefusedOnItsStreamAlone() throws Exception {
    Node node = twoRanksConnected();
    RankMessage huge = RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("x".repeat(300 * 1024)))
        .build();
    node.send(message(0, huge));
    DaemonFrame refused = node.next(0);
    assertThat(refused.getClosed().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED.value());
    assertThat(refused.getClosed().getDescription()).contains("exceeds the daemon's limit of 262144 bytes");
    assertThat(summary().getRanksConnected()).isEqualTo(1);
  }

  @Test
  void aRankThatSaysGoodbyeAndClosesIsFinishedAndOneWhoseStreamBreaksIsLost() throws Exception {
    Node node = twoRanksConnected();
    node.send(message(0, RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("done")).build()),
        closed(0, Status.OK), closed(1, Status.CANCELLED));
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
      JobSummary s = summary();
      assertThat(s.getRanksFinished()).isEqualTo(1);
      assertThat(s.getRanksLost()).isEqualTo(1);
    });
  }

  @Test
  void losingTheNodeStreamLosesEveryRankOnIt() throws Exception {
    Node node = twoRanksConnected();
    node.out.onError(new IllegalStateException("node agent killed"));
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(summary().getRanksLost()).isEqualTo(2));
  }

  @Test
  void framesStillInFlightForAStreamTheDaemonEndedAreNotTakenForANewStream() throws Exception {
    Node node = new Node();
    node.send(message(0, hello(0)));
    node.next(0);
    node.send(message(0, hello(0)));
    assertThat(node.next(0).getClosed().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
    // The relay had sent more before it saw the refusal: they must not open a stream that wants a Hello.
    node.send(message(0, RankMessage.newBuilder().setGoodbye(Goodbye.getDefaultInstance()).build()),
        closed(0, Status.CANCELLED), message(1, hello(1)));
    assertThat(node.next(1).getMessage().hasWelcome()).isTrue();
    assertThat(node.received).isEmpty();
  }

  /** A node stream on which ranks 0 and 1 (streams 0 and 1) have been welcomed. */
  private Node twoRanksConnected() throws InterruptedException {
    Node node = new Node();
    node.send(message(0, hello(0)), message(1, hello(1)));
    node.next(0);
    node.next(1);
    return node;
  }

  @Test
  void aNodeStreamCarriesAtMostItsLimitOfRankStreams() throws Exception {
    Node node = new Node();
    int limit = NodeSession.MAX_STREAMS;
    NodeUpload.Builder hellos = NodeUpload.newBuilder();
    for (int r = 0; r <= limit; r++) {
      hellos.addFrames(message(r, hello(r, limit + 1)));
    }
    node.out.onNext(hellos.build());
    for (int r = 0; r < limit; r++) {
      assertThat(node.next(r).getMessage().hasWelcome()).isTrue();
    }
    DaemonFrame refused = node.next(limit);
    assertThat(refused.getClosed().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED.value());
    assertThat(refused.getClosed().getDescription()).isEqualTo("a node stream carries at most 1024 rank streams "
        + "at once");
  }

  private JobSummary summary() {
    return DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
        .getJobStatus(GetJobStatusRequest.newBuilder().setJobId("job").build()).getSummary();
  }

  private static RankMessage hello(int rank) {
    return hello(rank, 2);
  }

  private static RankMessage hello(int rank, int worldSize) {
    ProcessGroup.Builder world = ProcessGroup.newBuilder().setName("0").setGlobalRankStart(0).setGlobalRankStride(1);
    for (int r = 0; r < worldSize; r++) {
      world.addRanks(r);
    }
    return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
        .setJobId("job").setGlobalRank(rank).setWorldSize(worldSize).setHostname("node0").setPid(100 + rank))
        .addProcessGroups(world)).build();
  }

  private static RankFrame message(int stream, RankMessage m) {
    return RankFrame.newBuilder().setStream(stream).setMessage(m).build();
  }

  private static RankFrame closed(int stream, Status status) {
    return RankFrame.newBuilder().setStream(stream).setClosed(StreamClosed.newBuilder()
        .setCode(status.getCode().value())).build();
  }

  /** A node stream as a relay drives it. */
  private final class Node implements StreamObserver<NodeDownload> {
    final BlockingQueue<DaemonFrame> received = new LinkedBlockingQueue<>();
    final StreamObserver<NodeUpload> out = CollectorGrpc.newStub(channel).connectNode(this);

    void send(RankFrame... frames) {
      out.onNext(NodeUpload.newBuilder().addAllFrames(List.of(frames)).build());
    }

    /** The daemon's next frame, which must be for {@code stream}, within 5 s. */
    DaemonFrame next(int stream) throws InterruptedException {
      DaemonFrame f = received.poll(5, TimeUnit.SECONDS);
      assertThat(f).as("a frame from the daemon within 5 s").isNotNull();
      assertThat(f.getStream()).isEqualTo(stream);
      return f;
    }

    @Override
    public void onNext(NodeDownload value) {
      received.addAll(value.getFramesList());
    }

    @Override
    public void onError(Throwable t) {
    }

    @Override
    public void onCompleted() {
    }
  }
}
