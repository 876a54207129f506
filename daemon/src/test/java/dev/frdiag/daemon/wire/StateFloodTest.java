package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.daemon.ForkedDaemon;
import dev.frdiag.proto.StreamEnds;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonFrame;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.InternedFrame;
import dev.frdiag.proto.v1.NodeDownload;
import dev.frdiag.proto.v1.NodeUpload;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankFrame;
import dev.frdiag.proto.v1.RecordBatch;
import dev.frdiag.proto.v1.WatchIncidentsRequest;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupUpdate;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.testing.incidents.IncidentWatch;
import dev.frdiag.testing.metrics.PrometheusScrape;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Floods of what a client can make the daemon hold, each against {@code fr-daemon} in its own JVM with a 512 MB
 * heap: the flood is refused (and counted) before the heap runs out, and a real hang of another job afterwards is
 * still reported.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StateFloodTest {
  private static final String HEAP = "512m";

  @TempDir
  static Path dataDir;

  private ForkedDaemon daemon;
  private ManagedChannel channel;

  @BeforeAll
  void start() throws Exception {
    daemon = ForkedDaemon.start(HEAP, dataDir, "--port", "0", "--metrics-port", "0", "--web-port", "-1",
        "--stall-timeout", "2s", "--snapshot-deadline", "2s", "--diagnose-interval", "1ms");
    channel = daemon.channel();
  }

  @AfterAll
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (daemon != null) {
      daemon.close();
      // Kept for whoever reads why a flood test failed.
      java.nio.file.Files.writeString(Path.of("target", "StateFloodTest-daemon.log"), daemon.output());
    }
  }

  @AfterEach
  void heapHeld() {
    assertThat(daemon.output()).doesNotContain("OutOfMemoryError");
    assertThat(daemon.isAlive()).isTrue();
  }

  @Test
  void groupsOfHundredsOfThousandsOfMembers() throws Exception {
    RankConnection flood = connected(channel, "flood-groups", 0, 1 << 20);
    // 115 groups of 900,000 members each, 2.7 MB on the wire and 3.6 MB held apiece: 414 MB if all were kept.
    ProcessGroup.Builder members = ProcessGroup.newBuilder().setGlobalRankStart(0).setGlobalRankStride(1);
    for (int m = 0; m < 900_000; m++) {
      members.addRanks(m);
    }
    for (int g = 0; g < 115 && !flood.ended().isDone(); g++) {
      flood.send(RankMessage.newBuilder().setProcessGroups(ProcessGroupUpdate.newBuilder()
          .addProcessGroups(members.setName("g" + g))).build());
    }
    Status ended = flood.ended().get(120, TimeUnit.SECONDS);
    assertThat(ended.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(ended.getDescription()).contains("process groups");
    assertRefusalCounted("groups");
    realHangIsReported("after-groups");
  }

  @Test
  void nodeContextOfThreeMegabytesForEachOfTwoHundredJobs() throws Exception {
    NodeContext.Builder context = NodeContext.newBuilder().setHostname("node0");
    for (int f = 0; f < 1000; f++) {
      context.addFindings(ContextFinding.newBuilder().setDetail("x".repeat(3000)));
    }
    int refused = 0;
    for (int job = 0; job < 200; job++) {
      try {
        CollectorGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
            .reportContext(context.setJobId("flood-context-" + job).build());
      } catch (StatusRuntimeException e) {
        assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        refused++;
      }
    }
    assertThat(refused).isPositive();
    assertRefusalCounted("context");
    realHangIsReported("after-context");
  }

  @Test
  void ranksEachWithItsRecordWindow() throws Exception {
    // 130,000 ranks of a 1,048,576-rank job, each with a one-member group and one record (which gives it a window
    // of 32 records), each stream ended without goodbye: some 4.5 KB held per rank, 580 MB if all were kept.
    Node node = Node.connect(channel);
    int ranks = 130_000;
    for (int first = 0; first < ranks; first += 1000) {
      NodeUpload.Builder upload = NodeUpload.newBuilder();
      for (int r = first; r < first + 1000; r++) {
        upload.addFrames(frame(r + 1, RankMessage.newBuilder().setHello(Hello.newBuilder()
            .setIdentity(identity("flood-ranks", r, 1 << 20)).addProcessGroups(own("own", r)))));
        upload.addFrames(frame(r + 1, RankMessage.newBuilder().setRecords(RecordBatch.newBuilder()
            .addRecords(record(1, CollectiveState.STARTED).toBuilder().setProcessGroup("own")))));
        upload.addFrames(RankFrame.newBuilder().setStream(r + 1).setClosed(StreamEnds.closed(
            Status.UNAVAILABLE.withDescription("rank process gone"))));
      }
      node.send(upload.build());
    }
    node.close();
    assertThat(node.ended.get(120, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
    assertThat(node.refused).as("rank streams refused").isNotEmpty()
        .allSatisfy(description -> assertThat(description).contains("with the ranks just sent"));
    assertRefusalCounted("ranks");
    realHangIsReported("after-ranks");
  }

  @Test
  void progressOfFourThousandGroupsOnEachRank() throws Exception {
    // 200 ranks, each announcing 4,096 groups of its own with 100-character names, then its progress on each: some
    // 1.6 MB of groups and 1.8 MB of progress held per rank, 680 MB if all were kept. The Hellos come first, so
    // that the job is full when the heartbeats come and their progress is what is refused.
    Node node = Node.connect(channel);
    int ranks = 200;
    String prefix = "g".repeat(95);
    for (int r = 0; r < ranks; r++) {
      Hello.Builder hello = Hello.newBuilder().setIdentity(identity("flood-progress", r, ranks));
      for (int g = 0; g < 4096; g++) {
        hello.addProcessGroups(own(prefix + String.format("%05d", g), r));
      }
      node.send(NodeUpload.newBuilder().addFrames(frame(r + 1, RankMessage.newBuilder().setHello(hello))).build());
    }
    for (int r = 0; r < ranks; r++) {
      Heartbeat.Builder heartbeat = Heartbeat.newBuilder().setSentAtNs(System.currentTimeMillis() * 1_000_000L);
      for (int g = 0; g < 4096; g++) {
        heartbeat.addProgress(ProcessGroupProgress.newBuilder().setProcessGroup(prefix + String.format("%05d", g))
            .setLastEnqueuedSeq(1));
      }
      node.send(NodeUpload.newBuilder().addFrames(frame(r + 1, RankMessage.newBuilder().setHeartbeat(heartbeat)))
          .build());
    }
    node.awaitRefusals(description -> description.contains("with the group progress just sent"));
    node.close();
    assertRefusalCounted("progress");
    realHangIsReported("after-progress");
  }

  @Test
  void reportsQueuedForTwoHundredFiftySixWatchersThatDoNotRead() throws Exception {
    // Every report of this job quotes its culprit's stack: 48 frames of 2,000 characters, some 100 KB of JSON.
    // 256 watchers that read nothing, each queueing up to 64 such reports as its own copy: 1.6 GB.
    List<Frame> frames = new ArrayList<>();
    for (int f = 0; f < 48; f++) {
      frames.add(Frame.newBuilder().setName("f".repeat(2000) + f).setFilename("train.py").setLine(f + 1).build());
    }
    // Rank 0 waits in all_reduce #2, which rank 1 never issued: a CPU stall of rank 1, quoted at its stack.
    connected(channel, "flood-watchers", 0, 2).answerEveryDumpRequest(snapshot(List.of(
        record(1, CollectiveState.COMPLETED), record(2, CollectiveState.STARTED)), List.of()));
    connected(channel, "flood-watchers", 1, 2).answerEveryDumpRequest(snapshot(List.of(
        record(1, CollectiveState.COMPLETED)), frames));
    // A small flow-control window, so that the transport takes hardly any of the reports off the daemon's hands.
    ManagedChannel slow = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext()
        .flowControlWindow(64 * 1024).build();
    List<ClientCall<WatchIncidentsRequest, ReportEnvelope>> watchers = new ArrayList<>();
    for (int w = 0; w < 256; w++) {
      ClientCall<WatchIncidentsRequest, ReportEnvelope> call = slow.newCall(
          DiagnosisGrpc.getWatchIncidentsMethod(), CallOptions.DEFAULT);
      call.start(new ClientCall.Listener<>() { }, new Metadata());
      // Asks for no message: the daemon may push nothing to it, as to a client that stopped reading. Nor will it
      // see its stream end: the end waits behind the report the transport could not deliver.
      call.sendMessage(WatchIncidentsRequest.getDefaultInstance());
      call.halfClose();
      watchers.add(call);
    }
    var diagnose = DiagnosisGrpc.newBlockingStub(channel);
    for (int i = 0; i < 100 && watchersCutOff() < 256; i++) {
      ReportEnvelope report = diagnose.withDeadlineAfter(30, TimeUnit.SECONDS).diagnoseNow(
          DiagnoseNowRequest.newBuilder().setJobId("flood-watchers").build());
      assertThat(report.getReportJson().length()).as("a report of some 100 KB").isGreaterThan(90_000);
    }
    assertThat(watchersCutOff()).as("watchers cut off for falling behind").isEqualTo(256);
    watchers.forEach(call -> call.cancel("done", null));
    slow.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    assertRefusalCounted("watchers");
    realHangIsReported("after-watchers");
  }

  /** Rank {@code rank} of a job of {@code worldSize}, connected; a member of world group "0" when there are two. */
  private static RankConnection connected(ManagedChannel channel, String job, int rank, int worldSize)
      throws InterruptedException {
    Hello.Builder hello = Hello.newBuilder().setIdentity(identity(job, rank, worldSize));
    if (worldSize == 2) {
      hello.addProcessGroups(ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1).setGlobalRankStride(1));
    }
    RankConnection r = new RankConnection(channel).send(RankMessage.newBuilder().setHello(hello).build());
    assertThat(r.next().hasWelcome()).isTrue();
    return r;
  }

  /** A snapshot of {@code records}, each at stack {@code stack}. */
  private static DumpReply snapshot(List<CollectiveRecord> records, List<Frame> stack) {
    DumpReply.Builder reply = DumpReply.newBuilder();
    for (int f = 0; f < stack.size(); f++) {
      reply.addFrames(InternedFrame.newBuilder().setId(f + 1).setFrame(stack.get(f)));
    }
    for (CollectiveRecord r : records) {
      CollectiveRecord.Builder b = r.toBuilder();
      for (int f = 0; f < stack.size(); f++) {
        b.addFrameIds(f + 1);
      }
      reply.addRecords(b);
    }
    return reply.build();
  }

  /** A group whose one member is {@code rank}. */
  private static ProcessGroup own(String name, int rank) {
    return ProcessGroup.newBuilder().setName(name).addRanks(rank).setGlobalRankStart(rank).setGlobalRankStride(1)
        .build();
  }

  private static RankFrame.Builder frame(int stream, RankMessage.Builder message) {
    return RankFrame.newBuilder().setStream(stream).setMessage(message);
  }

  /** Collective {@code seq} of world group "0", made long before the stall timeout. */
  private static CollectiveRecord record(long seq, CollectiveState state) {
    return CollectiveRecord.newBuilder().setRecordId(seq).setProcessGroup("0").setOp("all_reduce")
        .setCollectiveSeq(seq).setState(state).setTimeCreatedNs(1_700_000_000_000_000_000L + seq).build();
  }

  private static RankIdentity identity(String job, int rank, int worldSize) {
    return RankIdentity.newBuilder().setJobId(job).setGlobalRank(rank).setWorldSize(worldSize).setHostname("flood")
        .setPid(1).build();
  }

  private double watchersCutOff() throws Exception {
    return PrometheusScrape.samples(daemon.metricsPort()).getOrDefault(
        "frdiag_state_refused_total{scope=\"watcher\",state=\"watchers\"}", 0.0);
  }

  private void assertRefusalCounted(String state) throws Exception {
    Map<String, Double> samples = PrometheusScrape.samples(daemon.metricsPort());
    assertThat(samples.entrySet()).as("frdiag_state_refused_total for %s", state).anySatisfy(e -> {
      assertThat(e.getKey()).startsWith("frdiag_state_refused_total{").contains("state=\"" + state + "\"");
      assertThat(e.getValue()).isPositive();
    });
  }

  /** A 16-rank job whose rank 5's GPU stalls at step 10: reported as such within a minute. */
  private void realHangIsReported(String job) throws Exception {
    BlockingQueue<ReportEnvelope> reports = IncidentWatch.of(channel, job);
    try (RankSimulator sim = RankSimulator.builder().topology(Topology.defaults()).fault(Fault.gpuStall(5, 10))
        .jobId(job).channel(channel).stepInterval(Duration.ofMillis(10))
        .reporterSettings(ReporterSettings.builder().heartbeatInterval(Duration.ofMillis(200))
            .maxBatchDelay(Duration.ofMillis(50)).build()).build()) {
      assertThat(sim.awaitConnected(Duration.ofSeconds(30))).as("every rank of %s connected", job).isTrue();
      sim.start();
      ReportEnvelope report = reports.poll(60, TimeUnit.SECONDS);
      assertThat(report).as("a report of %s within 60 s", job).isNotNull();
      assertThat(report.getSummary().getVerdict()).isEqualTo(Verdict.HANG);
      assertThat(report.getSummary().getSymptom()).isEqualTo(Symptom.GPU_STALL);
      assertThat(report.getSummary().getCulpritRanksList()).containsExactly(5);
    }
  }

  /** One node stream driven by hand, carrying many rank streams: which of them the daemon refused, and why. */
  private static final class Node implements StreamObserver<NodeDownload> {
    final CompletableFuture<Status> ended = new CompletableFuture<>();
    final List<String> refused = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final StreamObserver<NodeUpload> out;

    private Node(ManagedChannel channel) {
      out = CollectorGrpc.newStub(channel).connectNode(this);
    }

    static Node connect(ManagedChannel channel) {
      return new Node(channel);
    }

    void send(NodeUpload upload) {
      out.onNext(upload);
    }

    void close() {
      out.onCompleted();
    }

    /** Waits until a refusal {@code matching} arrives, within 60 s. */
    void awaitRefusals(java.util.function.Predicate<String> matching) {
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60))
          .until(() -> refused.stream().anyMatch(matching));
    }

    @Override
    public void onNext(NodeDownload download) {
      for (DaemonFrame frame : download.getFramesList()) {
        if (frame.hasClosed() && frame.getClosed().getCode() == Status.Code.RESOURCE_EXHAUSTED.value()) {
          refused.add(frame.getClosed().getDescription());
        }
      }
    }

    @Override
    public void onError(Throwable t) {
      ended.complete(Status.fromThrowable(t));
    }

    @Override
    public void onCompleted() {
      ended.complete(Status.OK);
    }
  }
}
