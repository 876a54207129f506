package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.recorder.OpName;
import dev.frdiag.collector.recorder.ProcessGroupHandle;
import dev.frdiag.collector.recorder.TensorList;
import dev.frdiag.collector.reporter.Reporter;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.InProcessDaemon;
import dev.frdiag.proto.RecordTemplates;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.RecordBatch;
import dev.frdiag.proto.v1.RecordTemplate;
import dev.frdiag.testing.fakes.FakeCollector;
import dev.frdiag.testing.sim.Records;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Records that name a template: a reporter sends each kind of record's group, op, tensors and stack once per stream
 * (and once per dump reply) to a daemon that says it reads them, and whole records to one that does not; the daemon
 * keeps them as the records they stand for and refuses a record or template it cannot place.
 */
class RecordTemplatesTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final RankIdentity RANK = RankIdentity.newBuilder().setJobId("j").setGlobalRank(0)
      .setWorldSize(1).setHostname("node0").setPid(1).build();

  @TempDir
  Path dataDir;

  /** A recorder and the handle of its record in flight. */
  private record Ring(FlightRecorder recorder, long inFlight) {}

  private static FlightRecorder recorder() {
    return ring().recorder();
  }

  /** 60 records of two kinds (all_reduce and broadcast on one group), the last one still in flight. */
  private static Ring ring() {
    FlightRecorder recorder = new FlightRecorder(200, FlightRecorder::epochNanos, 600_000);
    ProcessGroupHandle world = recorder.registerProcessGroup("0", "default_pg", new int[] {0});
    OpName allReduce = recorder.op("all_reduce");
    OpName broadcast = recorder.op("broadcast");
    TensorList grads = recorder.tensors(new long[][] {{1024, 8}}, "Float");
    TensorList params = recorder.tensors(new long[][] {{16}}, "BFloat16");
    for (int i = 0; i < 59; i++) {
      recorder.completed(recorder.enqueue(world, i % 2 == 0 ? allReduce : broadcast, i % 2 == 0 ? grads : params,
          i % 2 == 0 ? grads : params, null));
    }
    return new Ring(recorder, recorder.enqueue(world, allReduce, grads, grads, null));
  }

  /** The records of {@code messages}' batches as the whole records they stand for, newest copy per record id. */
  private static List<CollectiveRecord> expanded(List<RankMessage> messages) {
    Map<Integer, RecordTemplate> templates = new HashMap<>();
    Map<Long, CollectiveRecord> byId = new TreeMap<>();
    for (RankMessage m : messages) {
      for (RecordTemplate t : m.getRecords().getTemplatesList()) {
        assertThat(templates.put(t.getId(), t)).as("template %d sent once", t.getId()).isNull();
      }
      for (CollectiveRecord r : m.getRecords().getRecordsList()) {
        byId.put(r.getRecordId(), RecordTemplates.complete(RecordTemplates.fields(templates.get(r.getTemplateId()))
            .build(), r));
      }
    }
    return new ArrayList<>(byId.values());
  }

  /** The first message {@code daemon} received from rank 0 that is {@code what}, once one came; and all before it. */
  private static List<RankMessage> upTo(FakeCollector daemon, Predicate<RankMessage> what) {
    await().atMost(WAIT).until(() -> daemon.received.getOrDefault(0, List.of()).stream().anyMatch(what));
    List<RankMessage> sent = List.copyOf(daemon.received.get(0));
    int at = 0;
    while (!what.test(sent.get(at))) {
      at++;
    }
    return sent.subList(0, at + 1);
  }

  /** The whole records that {@code messages}, but the last, carried. */
  private static List<CollectiveRecord> recordsBeforeLast(List<RankMessage> messages) {
    return expanded(messages.subList(0, messages.size() - 1).stream().filter(RankMessage::hasRecords).toList());
  }

  /** What a test checks once the reporter's first 60 records reached the fake daemon. */
  private interface Check {
    void run() throws Exception;
  }

  /**
   * Runs a reporter of {@code recorder} (heartbeats every 50 ms) against {@code daemon} until its 60 records
   * arrived, then {@code check}.
   */
  private static void reporting(FlightRecorder recorder, FakeCollector daemon, Check check) throws Exception {
    ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
    Reporter reporter = Reporter.builder(recorder, RANK, channel).settings(ReporterSettings.builder()
        .maxBatchDelay(Duration.ofMillis(20)).heartbeatInterval(Duration.ofMillis(50)).build()).start();
    try {
      await().atMost(WAIT).until(() -> daemon.of(0, RankMessage.BodyCase.RECORDS).stream()
          .mapToInt(m -> m.getRecords().getRecordsCount()).sum() >= 60);
      check.run();
    } finally {
      reporter.kill();
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void aReporterSendsEachKindOfRecordOnceAsATemplateToADaemonThatReadsThem() throws Exception {
    FlightRecorder recorder = recorder();
    try (FakeCollector daemon = new FakeCollector(true)) {
      reporting(recorder, daemon, () -> {
        List<RankMessage> batches = daemon.of(0, RankMessage.BodyCase.RECORDS);
        assertThat(batches.stream().mapToInt(m -> m.getRecords().getTemplatesCount()).sum())
            .as("two kinds of record, two templates").isEqualTo(2);
        assertThat(batches.stream().flatMap(m -> m.getRecords().getRecordsList().stream()))
            .allSatisfy(r -> {
              assertThat(r.getTemplateId()).isBetween(1, 2);
              assertThat(r.getProcessGroup()).isEmpty();
              assertThat(r.getOp()).isEmpty();
            });
        assertThat(expanded(batches)).isEqualTo(Records.all(recorder));

        daemon.requestDump(0, 7, 5_000);
        await().atMost(WAIT).until(() -> !daemon.of(0, RankMessage.BodyCase.DUMP_REPLY).isEmpty());
        DumpReply reply = daemon.of(0, RankMessage.BodyCase.DUMP_REPLY).get(0).getDumpReply();
        assertThat(reply.getTemplatesCount()).as("a reply carries its own templates").isEqualTo(2);
        assertThat(expanded(List.of(RankMessage.newBuilder().setRecords(RecordBatch.newBuilder()
            .addAllTemplates(reply.getTemplatesList()).addAllRecords(reply.getRecordsList())).build())))
            .isEqualTo(Records.all(recorder));
      });
    }
  }

  @Test
  void aDaemonThatDoesNotSayItReadsTemplatesGetsWholeRecords() throws Exception {
    FlightRecorder recorder = recorder();
    try (FakeCollector daemon = new FakeCollector(false)) {
      reporting(recorder, daemon, () -> {
        List<RankMessage> batches = daemon.of(0, RankMessage.BodyCase.RECORDS);
        assertThat(batches).allSatisfy(m -> assertThat(m.getRecords().getTemplatesCount()).isZero());
        Map<Long, CollectiveRecord> byId = new TreeMap<>();
        batches.forEach(m -> m.getRecords().getRecordsList().forEach(r -> byId.put(r.getRecordId(), r)));
        assertThat(new ArrayList<>(byId.values())).isEqualTo(Records.all(recorder));
      });
    }
  }

  @Test
  void theDaemonKeepsRecordsNamingTemplatesAsTheWholeRecordsTheyStandFor() throws Exception {
    FlightRecorder recorder = recorder();
    try (InProcessDaemon daemon = new InProcessDaemon(DaemonSettings.builder().dataDir(dataDir).build())) {
      Reporter reporter = Reporter.builder(recorder, RANK, daemon.channel())
          .settings(ReporterSettings.builder().maxBatchDelay(Duration.ofMillis(20)).build()).start();
      try {
        // The job exists only once the reporter's hello went through: until then there is nothing to compare.
        await().atMost(WAIT).ignoreException(java.util.NoSuchElementException.class)
            .untilAsserted(() -> assertThat(daemon.daemon().registry().find("j").orElseThrow()
            .evidence(Map.of(), 0, Duration.ofSeconds(1), "not asked").ranks().get(0).records())
            .isEqualTo(Records.all(recorder)));
      } finally {
        reporter.kill();
      }
    }
  }

  private static RankMessage hello() {
    return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RANK).addProcessGroups(
        ProcessGroup.newBuilder().setName("0").addRanks(0).setGlobalRankStride(1))).build();
  }

  private static RecordTemplate template(int id, String group) {
    return RecordTemplate.newBuilder().setId(id).setProcessGroup(group).setOp("all_reduce").build();
  }

  private static CollectiveRecord naming(int templateId) {
    return CollectiveRecord.newBuilder().setRecordId(5).setCollectiveSeq(1).setTimeCreatedNs(1)
        .setTemplateId(templateId).build();
  }

  private static Status refusal(InProcessDaemon daemon, RecordBatch.Builder batch) throws Exception {
    Status status = RankConnection.send(daemon.channel(), hello(), RankMessage.newBuilder().setRecords(batch)
        .build()).get(5, TimeUnit.SECONDS);
    assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    return status;
  }

  @Test
  void aRecordOrTemplateTheDaemonCannotPlaceEndsTheStreamSayingWhich() throws Exception {
    try (InProcessDaemon daemon = new InProcessDaemon(DaemonSettings.builder().dataDir(dataDir).build())) {
      assertThat(refusal(daemon, RecordBatch.newBuilder().addRecords(naming(9))).getDescription())
          .isEqualTo("record 5 names template 9 that was not sent before it");
      assertThat(refusal(daemon, RecordBatch.newBuilder().addTemplates(template(1, "0"))
          .addTemplates(template(1, "0"))).getDescription()).isEqualTo("record template 1 was sent twice");
      assertThat(refusal(daemon, RecordBatch.newBuilder().addTemplates(template(2, "tp"))).getDescription())
          .isEqualTo("record template 2 names process group 'tp' that was never announced");
      assertThat(refusal(daemon, RecordBatch.newBuilder().addTemplates(template(0, "0"))).getDescription())
          .isEqualTo("a record template has id 0; template ids start at 1");
      RecordBatch.Builder tooMany = RecordBatch.newBuilder();
      for (int id = 1; id <= RecordTemplates.MAX_PER_STREAM + 1; id++) {
        tooMany.addTemplates(template(id, "0"));
      }
      assertThat(refusal(daemon, tooMany).getDescription())
          .isEqualTo("more than 65536 record templates on one stream");
      assertThat(refusal(daemon, RecordBatch.newBuilder().addTemplates(template(1, "0"))
          .addRecords(naming(1).toBuilder().setRecordId(-1))).getDescription())
          .isEqualTo("record_id 18446744073709551615 is beyond 9223372036854775807");
    }
  }

  @Test
  void aHeartbeatSaysItsRecordsAreCurrentOnlyAfterEveryRecordOfTheRingWentOutBeforeIt() throws Exception {
    FlightRecorder recorder = recorder();
    try (FakeCollector daemon = new FakeCollector(true)) {
      reporting(recorder, daemon, () -> assertThat(recordsBeforeLast(upTo(daemon,
          m -> m.hasHeartbeat() && m.getHeartbeat().getRecordsCurrent())))
          .as("the ring as the heartbeat found it, all sent before it").isEqualTo(Records.all(recorder)));
    }
  }

  @Test
  void aRankWhoseRecordsAreAllOnTheStreamAnswersASnapshotRequestWithoutSendingThemAgain() throws Exception {
    Ring ring = ring();
    FlightRecorder recorder = ring.recorder();
    try (FakeCollector daemon = new FakeCollector(true)) {
      reporting(recorder, daemon, () -> {
        // Its state moves on just before the request: the reply may only say so once the change is on the stream.
        recorder.completed(ring.inFlight());
        daemon.requestDump(0, DumpRequest.newBuilder().setRequestId(8).setRecordsOnStreamOk(true).build());
        List<RankMessage> sent = upTo(daemon, RankMessage::hasDumpReply);
        DumpReply reply = sent.get(sent.size() - 1).getDumpReply();
        assertThat(reply.getRecordsOnStream()).isTrue();
        assertThat(reply.getRecordsCount() + reply.getTemplatesCount()).isZero();
        assertThat(reply.getProgressList()).isEqualTo(recorder.progress());
        assertThat(recordsBeforeLast(sent)).as("the ring as it is, every record sent before the reply")
            .isEqualTo(Records.all(recorder));

        daemon.requestDump(0, DumpRequest.newBuilder().setRequestId(9).build());
        await().atMost(WAIT).until(() -> daemon.of(0, RankMessage.BodyCase.DUMP_REPLY).size() == 2);
        DumpReply asked = daemon.of(0, RankMessage.BodyCase.DUMP_REPLY).get(1).getDumpReply();
        assertThat(asked.getRecordsOnStream()).as("not allowed by the request").isFalse();
        assertThat(asked.getRecordsCount()).isEqualTo(Records.all(recorder).size());
      });
    }
  }

  @Test
  void aReplyThatSaysItsRecordsAreOnTheStreamAndCarriesRecordsEndsTheStream() throws Exception {
    try (InProcessDaemon daemon = new InProcessDaemon(DaemonSettings.builder().dataDir(dataDir).build())) {
      Status status = RankConnection.send(daemon.channel(), hello(), RankMessage.newBuilder().setDumpReply(
          DumpReply.newBuilder().setRequestId(3).setRecordsOnStream(true).addRecords(naming(0))).build())
          .get(5, TimeUnit.SECONDS);
      assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(status.getDescription()).isEqualTo("dump reply 3 says its records are on the stream "
          + "(records_on_stream) but carries 1 records and 0 templates: send one or the other");
    }
  }
}
