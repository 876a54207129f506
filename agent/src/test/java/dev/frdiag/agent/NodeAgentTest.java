package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.RankMessage.BodyCase;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.testing.dumps.DumpWriter;
import dev.frdiag.testing.fakes.FakeCollector;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The node agent against a fake daemon on loopback, with dumps and logs written by the test. */
class NodeAgentTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @TempDir
  Path dir;

  private FakeCollector daemon;
  private ManagedChannel channel;
  private NodeAgent agent;

  @BeforeEach
  void start() throws IOException {
    daemon = new FakeCollector();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
  }

  @AfterEach
  void stop() throws InterruptedException {
    if (agent != null) {
      agent.close();
    }
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    daemon.close();
  }

  @Test
  void leavesDumpsAndLinesFromBeforeItStartedAlone() throws IOException {
    write(dump(0, 2, true));
    appendLog(timeoutLine(0, 3));
    agent = start(settings(0).build());
    await().atMost(WAIT).until(agent::allConnected);

    appendLog(timeoutLine(0, 5));

    await().atMost(WAIT).until(() -> daemon.of(0, BodyCase.EVENT).size() == 1);
    assertThat(daemon.of(0, BodyCase.EVENT).get(0).getEvent().getSeq()).isEqualTo(5);
    // The log was read after start, and the dump file looked at with it: the old one was not sent.
    assertThat(daemon.of(0, BodyCase.RECORDS)).isEmpty();
    assertThat(daemon.of(0, BodyCase.HELLO).get(0).getHello().getProcessGroupsList()).isEmpty();
  }

  @Test
  void shipsANewDumpAndClaimsNoLiveProgress() throws IOException {
    agent = start(settings(0).build());
    await().atMost(WAIT).until(agent::allConnected);

    write(dump(0, 2, true));

    await().atMost(WAIT).until(() -> !daemon.of(0, BodyCase.RECORDS).isEmpty());
    List<RankMessage> messages = daemon.received.get(0);
    int groups = indexOf(messages, BodyCase.PROCESS_GROUPS);
    assertThat(groups).as("groups are announced before the records that use them")
        .isBetween(0, indexOf(messages, BodyCase.RECORDS));
    assertThat(messages.get(groups).getProcessGroups().getProcessGroupsList()).extracting(ProcessGroup::getName)
        .containsExactly("0");
    assertThat(daemon.of(0, BodyCase.RECORDS).get(0).getRecords().getRecordsCount()).isEqualTo(5);
    assertThat(daemon.of(0, BodyCase.RECORDS).get(0).getRecords().getFramesList()).hasSize(1);
    await().atMost(WAIT).until(() -> !daemon.of(0, BodyCase.HEARTBEAT).isEmpty());
    assertThat(daemon.of(0, BodyCase.HEARTBEAT)).allSatisfy(h -> assertThat(h.getHeartbeat().getProgressList())
        .as("a dump is a snapshot, not live progress").isEmpty());
  }

  @Test
  void sendsATimeoutAndItsStatusLineAsOneEvent() throws IOException {
    agent = start(settings(0, 1).build());
    await().atMost(WAIT).until(agent::allConnected);

    appendLog("x".repeat(3 * LogFollower.MAX_LINE) + "\r" + "y".repeat(100) + "\n"
        + timeoutLine(1, 7)
        + "[rank1]:[E1213 17:24:49.082 ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID 0(default_pg) Rank 1]  failure"
        + " detected by watchdog at work sequence id: 7 PG status: last enqueued work: 7, last completed work: 6\n"
        + "[rank0]:[E1213 17:24:50.001 ProcessGroupNCCL.cpp:1642] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received"
        + " a dump signal due to a collective timeout from  rank 1 and we will try our best to dump the debug info."
        + " Last enqueued NCCL work: 7, last completed NCCL work: 6.\n"
        + "[rank0]:[E1213 17:33:10.5 ProcessGroupNCCL.cpp:1555] [PG ID 0 PG GUID 0(default_pg) Rank 0]"
        + " ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued"
        + " collectives.\n");

    await().atMost(WAIT).until(() -> !daemon.of(0, BodyCase.EVENT).isEmpty());
    await().atMost(WAIT).until(() -> !daemon.of(1, BodyCase.EVENT).isEmpty());
    RankEvent timeout = daemon.of(1, BodyCase.EVENT).get(0).getEvent();
    assertThat(timeout.getKind()).isEqualTo(RankEvent.Kind.WATCHDOG_TIMEOUT);
    assertThat(timeout.getSeq()).isEqualTo(7);
    assertThat(timeout.getProcessGroup()).isEqualTo("0");
    assertThat(timeout.getLastEnqueuedSeq()).isEqualTo(7);
    assertThat(timeout.getLastCompletedSeq()).isEqualTo(6);
    assertThat(timeout.getMessage()).contains("Watchdog caught collective operation timeout");
    // Rank 0 only received the dump signal: its one event is its own stuck watchdog.
    assertThat(daemon.of(0, BodyCase.EVENT)).extracting(m -> m.getEvent().getKind())
        .containsExactly(RankEvent.Kind.WATCHDOG_STUCK);
    assertThat(daemon.of(1, BodyCase.EVENT)).hasSize(1);
  }

  @Test
  void shortensItsWaitToAnswerBeforeTheDaemonStopsWaiting() {
    agent = start(settings(0).dumpWait(Duration.ofSeconds(15)).build());
    await().atMost(WAIT).until(agent::allConnected);

    daemon.requestDump(0, 41, 600);

    await().atMost(WAIT).until(() -> !daemon.of(0, BodyCase.DUMP_REPLY).isEmpty());
    DumpReply reply = daemon.of(0, BodyCase.DUMP_REPLY).get(0).getDumpReply();
    assertThat(reply.getRequestId()).isEqualTo(41);
    assertThat(reply.getRecordsList()).isEmpty();
    // Four fifths of the daemon's 600 ms, not the 15 s dump wait: the rest is for the reply to arrive.
    assertThat(reply.getError()).isEqualTo("rank 0 did not answer: no debug pipe configured"
        + " (TORCH_NCCL_DEBUG_INFO_PIPE_FILE, NCCL only), so it cannot be asked to dump; no dump at " + dir
        + "/trace_rank_0 within 480 ms");
  }

  @Test
  void saysWhyWhenThePipeIsMissing() {
    agent = start(settings(0).pipePrefix(dir + "/pipe_").dumpWait(Duration.ofMillis(100)).build());
    await().atMost(WAIT).until(agent::allConnected);

    daemon.requestDump(0, 1, 5_000);

    await().atMost(WAIT).until(() -> !daemon.of(0, BodyCase.DUMP_REPLY).isEmpty());
    assertThat(daemon.of(0, BodyCase.DUMP_REPLY).get(0).getDumpReply().getError()).isEqualTo("rank 0 did not"
        + " answer: its dump pipe " + dir + "/pipe_0.pipe does not exist (is TORCH_NCCL_DEBUG_INFO_PIPE_FILE set"
        + " on the job, and TORCH_FR_BUFFER_SIZE above 0?); no dump at " + dir + "/trace_rank_0 within 100 ms");
    assertThat(dir.resolve("pipe_0.pipe")).as("the agent never creates a pipe").doesNotExist();
  }

  @Test
  void oneDumpAnswersEveryPendingRequest() throws IOException {
    agent = start(settings(0).build());
    await().atMost(WAIT).until(agent::allConnected);
    daemon.requestDump(0, 1, 10_000);
    daemon.requestDump(0, 2, 10_000);

    // The rank dumps on its own, as PyTorch does when its watchdog times out.
    write(dump(0, 2, true));

    await().atMost(WAIT).until(() -> daemon.of(0, BodyCase.DUMP_REPLY).size() == 2);
    assertThat(daemon.of(0, BodyCase.DUMP_REPLY)).extracting(RankMessage::getDumpReply).allSatisfy(r -> {
      assertThat(r.getError()).isEmpty();
      assertThat(r.getRecordsCount()).isEqualTo(5);
      assertThat(r.getFramesList()).extracting(f -> f.getFrame().getName()).containsExactly("train_step");
      assertThat(r.getProgressList()).extracting(ProcessGroupProgress::getLastCompletedSeq).containsExactly(4L);
    }).extracting(DumpReply::getRequestId).containsExactlyInAnyOrder(1L, 2L);
  }

  @Test
  void leavesOutGroupsTheDaemonWouldRefuse() throws IOException {
    agent = start(settings(0).build());
    await().atMost(WAIT).until(agent::allConnected);

    // A group of ranks 4-5 in a job of 2: the agent was told the wrong world size, or the dump is odd.
    FlightRecorderDump odd = dump(0, 2, true);
    ProcessGroup stranger = group("9", 4, 5);
    List<CollectiveRecord> records = new ArrayList<>(odd.records());
    records.add(records.get(0).toBuilder().setRecordId(99).setProcessGroup("9").build());
    write(new FlightRecorderDump(odd.file(), 0, odd.version(), odd.commLibVersion(),
        List.of(odd.processGroups().get(0), stranger), records, odd.progress(), odd.frames(), List.of()));

    await().atMost(WAIT).until(() -> !daemon.of(0, BodyCase.RECORDS).isEmpty());
    assertThat(daemon.of(0, BodyCase.PROCESS_GROUPS).get(0).getProcessGroups().getProcessGroupsList())
        .extracting(ProcessGroup::getName).containsExactly("0");
    assertThat(daemon.of(0, BodyCase.RECORDS).get(0).getRecords().getRecordsList())
        .extracting(CollectiveRecord::getProcessGroup).containsOnly("0").hasSize(5);
  }

  @Test
  @SuppressWarnings("try") // keep only holds the pipe open
  void closeSaysGoodbyeOnceAndAnswersWhatIsPending() throws Exception {
    Path pipe = mkfifo(dir.resolve("pipe_0.pipe"));
    // Held open read-write like a rank holds its pipe, so what the agent writes stays until read.
    try (RandomAccessFile keep = new RandomAccessFile(pipe.toFile(), "rw");
        FileInputStream in = new FileInputStream(pipe.toFile())) {
      agent = start(settings(0).pipePrefix(dir + "/pipe_").build());
      await().atMost(WAIT).until(agent::allConnected);
      daemon.requestDump(0, 8, 10_000);
      await().atMost(WAIT).until(() -> in.available() > 0);
      assertThat(in.read()).isEqualTo('1');

      agent.close();
      agent.close();

      await().atMost(WAIT).until(() -> !daemon.of(0, BodyCase.GOODBYE).isEmpty());
      assertThat(daemon.of(0, BodyCase.GOODBYE)).hasSize(1);
      assertThat(daemon.of(0, BodyCase.DUMP_REPLY)).extracting(m -> m.getDumpReply().getError())
          .containsExactly("the node agent is stopping");
      assertThat(agent.allConnected()).isFalse();
      assertThat(in.available()).as("one byte per request").isZero();
    }
  }

  @Test
  void stampsEventsAndHeartbeatsWithItsWallClock() throws IOException {
    Instant at = Instant.parse("2025-09-23T07:35:05Z");
    long atNanos = at.toEpochMilli() * 1_000_000L;
    agent = new NodeAgent(settings(0).build(), channel, null, Clock.fixed(at, ZoneOffset.UTC), System::nanoTime);
    await().atMost(WAIT).until(agent::allConnected);

    appendLog(timeoutLine(0, 5));

    await().atMost(WAIT).until(() -> !daemon.of(0, BodyCase.EVENT).isEmpty());
    assertThat(daemon.of(0, BodyCase.EVENT).get(0).getEvent().getTimeNs()).isEqualTo(atNanos);
    await().atMost(WAIT).until(() -> !daemon.of(0, BodyCase.HEARTBEAT).isEmpty());
    assertThat(daemon.of(0, BodyCase.HEARTBEAT)).allSatisfy(h -> assertThat(h.getHeartbeat().getSentAtNs())
        .isEqualTo(atNanos));
  }

  private static Path mkfifo(Path path) throws Exception {
    Process p = new ProcessBuilder("mkfifo", path.toString()).inheritIO().start();
    assertThat(p.waitFor()).as("mkfifo exit status").isZero();
    return path;
  }

  private NodeAgent start(AgentSettings settings) {
    return new NodeAgent(settings, channel);
  }

  @Test
  void sendsProgressOnlyFromFreshWorkerServerAnswers() throws Exception {
    Path socket = dir.resolve("torch_worker_0.sock");
    java.nio.channels.ServerSocketChannel server = FakeTrainingRanks.serve(new FakeTrainingRanks.Training(0, 2,
        System.currentTimeMillis(), 20, 64), socket);
    agent = start(settings(0).workerSocket(dir + "/torch_worker_{rank}.sock")
        .progressInterval(Duration.ofMillis(20)).build());

    await().atMost(WAIT).until(() -> withProgress(0) >= 3);
    assertThat(daemon.of(0, BodyCase.HELLO).get(0).getHello().getIdentity().getPid())
        .as("the socket is served by the agent's own process, which it never takes for a rank").isZero();
    assertThat(daemon.of(0, BodyCase.PROCESS_GROUPS)).singleElement().satisfies(m -> assertThat(
        m.getProcessGroups().getProcessGroupsList()).extracting(ProcessGroup::getName).containsExactly("0"));
    List<Long> completed = daemon.of(0, BodyCase.HEARTBEAT).stream()
        .filter(m -> m.getHeartbeat().getProgressCount() > 0)
        .map(m -> m.getHeartbeat().getProgress(0).getLastCompletedSeq()).toList();
    assertThat(completed).as("each answer sent once, as the rank advances").isSorted().doesNotHaveDuplicates();

    // The rank dies, leaving its socket file behind: its last counts are not sent again.
    server.close();
    int heartbeats = daemon.of(0, BodyCase.HEARTBEAT).size();
    await().atMost(WAIT).until(() -> daemon.of(0, BodyCase.HEARTBEAT).size() >= heartbeats + 5);
    long sent = withProgress(0);
    int later = daemon.of(0, BodyCase.HEARTBEAT).size();
    await().atMost(WAIT).until(() -> daemon.of(0, BodyCase.HEARTBEAT).size() >= later + 5);
    assertThat(withProgress(0)).isEqualTo(sent);
  }

  @Test
  @SuppressWarnings("try") // keep only holds the pipe open
  void dumpsThroughThePipeForProgressOnlyWhileTheWorkerServerDoesNotAnswer() throws Exception {
    Path pipe = mkfifo(dir.resolve("pipe_0.pipe"));
    FakeTrainingRanks.Training training = new FakeTrainingRanks.Training(0, 2, System.currentTimeMillis(), 20, 64);
    java.nio.channels.ServerSocketChannel server = FakeTrainingRanks.serve(training,
        dir.resolve("torch_worker_0.sock"));
    try (RandomAccessFile keep = new RandomAccessFile(pipe.toFile(), "rw");
        FileInputStream in = new FileInputStream(pipe.toFile())) {
      agent = start(settings(0).pipePrefix(dir + "/pipe_").workerSocket(dir + "/torch_worker_{rank}.sock")
          .progressInterval(Duration.ofMillis(20)).pipeDumpInterval(Duration.ofMillis(50)).build());
      await().atMost(WAIT).until(() -> withProgress(0) >= 10);
      assertThat(in.available()).as("no pipe dump while the worker server answers").isZero();

      server.close();
      await().atMost(WAIT).until(() -> in.available() > 0);
      // Told apart from any answer still on its way: this dump is of a rank that has trained far longer.
      FakeTrainingRanks.Training longer = new FakeTrainingRanks.Training(0, 2, System.currentTimeMillis() - 1_000_000,
          20, 64);
      DumpWriter.write(longer.dump(System.currentTimeMillis(), false, true, dir.resolve("trace_rank_0")), dir,
          "trace_rank_", DumpWriter.Encoding.PICKLE);

      await().atMost(WAIT).until(() -> daemon.of(0, BodyCase.HEARTBEAT).stream()
          .anyMatch(m -> m.getHeartbeat().getProgressCount() > 0
              && m.getHeartbeat().getProgress(0).getLastEnqueuedSeq() > 40_000));
    }
  }

  private long withProgress(int rank) {
    return daemon.of(rank, BodyCase.HEARTBEAT).stream().filter(m -> m.getHeartbeat().getProgressCount() > 0)
        .count();
  }

  private AgentSettings.Builder settings(Integer... ranks) {
    return AgentSettings.builder().jobId("job1").hostname("node0").worldSize(2).localRanks(List.of(ranks))
        .dumpPrefix(dir + "/trace_rank_").logFiles(List.of(dir.resolve("train.log")))
        .pollInterval(Duration.ofMillis(20))
        .stream(ReporterSettings.builder().maxBatchDelay(Duration.ofMillis(20))
            .heartbeatInterval(Duration.ofMillis(50)).backoff(Duration.ofMillis(20), Duration.ofMillis(200))
            .build());
  }

  private void appendLog(String text) throws IOException {
    Files.writeString(dir.resolve("train.log"), text, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }

  private static String timeoutLine(int rank, long seq) {
    return "[rank" + rank + "]:[E1213 17:24:49.082111648 ProcessGroupNCCL.cpp:632] [Rank " + rank + "] Watchdog"
        + " caught collective operation timeout: WorkNCCL(SeqNum=" + seq + ", OpType=ALLREDUCE, NumelIn=8,"
        + " NumelOut=8, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n";
  }

  private void write(FlightRecorderDump dump) throws IOException {
    DumpWriter.write(dump, dir, "trace_rank_", DumpWriter.Encoding.PICKLE);
  }

  private static int indexOf(List<RankMessage> messages, BodyCase kind) {
    for (int i = 0; i < messages.size(); i++) {
      if (messages.get(i).getBodyCase() == kind) {
        return i;
      }
    }
    return -1;
  }

  private static ProcessGroup group(String name, int... ranks) {
    CommsId.GroupLayout layout = CommsId.layoutOf(ranks);
    ProcessGroup.Builder g = ProcessGroup.newBuilder().setName(name).setDesc("default_pg")
        .setGlobalRankStart(layout.start()).setGlobalRankStride(layout.stride()).setLocalId(name);
    for (int r : ranks) {
      g.addRanks(r);
    }
    return g.build();
  }

  /** Rank {@code rank} of a world: all_reduce seq 1-4 completed, seq 5 issued and not completed. */
  private FlightRecorderDump dump(int rank, int worldSize, boolean issuedFifth) {
    int[] members = new int[worldSize];
    for (int i = 0; i < worldSize; i++) {
      members[i] = i;
    }
    ProcessGroup world = group("0", members);
    long t0 = 1_758_610_505_880_883_597L;
    List<CollectiveRecord> records = new ArrayList<>();
    for (long seq = 1; seq <= (issuedFifth ? 5 : 4); seq++) {
      CollectiveRecord.Builder r = CollectiveRecord.newBuilder().setRecordId(seq).setProcessGroup("0")
          .setCollectiveSeq(seq).setOpId(seq).setBackend("nccl").setOp("all_reduce")
          .setState(seq == 5 ? CollectiveState.SCHEDULED : CollectiveState.COMPLETED)
          .setTimeCreatedNs(t0 + seq).setTimeoutMs(600_000).setThreadName("MainThread").setThreadId("1")
          .setCommsId(CommsId.of("0", seq, false, CommsId.layoutOf(members))).addFrameIds(0);
      if (seq != 5) {
        r.setTimeCompletedNs(t0 + seq + 100);
      }
      records.add(r.build());
    }
    ProcessGroupProgress progress = ProcessGroupProgress.newBuilder().setProcessGroup("0")
        .setLastEnqueuedSeq(issuedFifth ? 5 : 4).setLastStartedSeq(-1).setLastCompletedSeq(4)
        .setLastEnqueuedP2PSeq(-1).setLastCompletedP2PSeq(-1).build();
    return new FlightRecorderDump(dir.resolve("trace_rank_" + rank), rank, "2.10", "2.27.3", List.of(world),
        records, List.of(progress),
        Map.of(0, Frame.newBuilder().setName("train_step").setFilename("train.py").setLine(88).build()), List.of());
  }

  @Test
  void anInvestigationMakesTheAgentPostWhatItsNodesNcclLogSays() throws IOException {
    Path ncclLog = dir.resolve("nccl.log");
    Files.writeString(ncclLog, "node0:3468:3905 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        + "node0:3468:3905 [0] transport/net_ib.cc:1405 NCCL WARN NET/IB : Got completion from peer "
        + "10.0.0.7<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n");
    agent = new NodeAgent(settings(0).build(), channel,
        new dev.frdiag.agent.NodeContextCollector(null, List.of(ncclLog), Duration.ofMinutes(1)));
    await().atMost(WAIT).until(agent::allConnected);
    assertThat(daemon.contexts).isEmpty();

    daemon.requestDump(0, 3, 2_000);

    await().atMost(WAIT).until(() -> !daemon.contexts.isEmpty());
    var node = daemon.contexts.get(0);
    assertThat(node.getJobId()).isEqualTo("job1");
    assertThat(node.getHostname()).isEqualTo("node0");
    assertThat(node.getRanksList()).containsExactly(0);
    assertThat(node.getFindingsList()).anySatisfy(f -> {
      assertThat(f.getKind()).isEqualTo(dev.frdiag.proto.v1.ContextFinding.Kind.LINK_FAULT);
      assertThat(f.getPeer()).contains("10.0.0.7");
      assertThat(f.getDetail()).contains("status=12");
    });
  }
}
