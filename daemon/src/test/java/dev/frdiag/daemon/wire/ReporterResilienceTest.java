package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.recorder.OpName;
import dev.frdiag.collector.recorder.ProcessGroupHandle;
import dev.frdiag.collector.recorder.TensorList;
import dev.frdiag.collector.reporter.Reporter;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetJobStatusRequest;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankStatus;
import dev.frdiag.testing.sim.Records;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A real reporter against a real daemon that goes away and comes back on the same port. */
class ReporterResilienceTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final String JOB = "resilience";
  private static final int CAPACITY = 64;
  private static final int MAX_QUEUED_EVENTS = 8;
  private static final ReporterSettings FAST = ReporterSettings.builder()
      .maxBatchDelay(Duration.ofMillis(20))
      .heartbeatInterval(Duration.ofMillis(100))
      .backoff(Duration.ofMillis(50), Duration.ofMillis(200))
      .helloTimeout(Duration.ofSeconds(2))
      .shutdownTimeout(Duration.ofSeconds(2))
      .maxQueuedEvents(MAX_QUEUED_EVENTS)
      .build();

  @TempDir
  Path dataDir;

  private final List<Daemon> daemons = new ArrayList<>();
  private ManagedChannel channel;
  private Reporter reporter;

  private final FlightRecorder recorder = new FlightRecorder(CAPACITY, FlightRecorder::epochNanos, 600_000);
  private final ProcessGroupHandle world = recorder.registerProcessGroup("0", "default_pg", new int[] {0});
  private final OpName allReduce = recorder.op("all_reduce");
  private final TensorList tensors = recorder.tensors(new long[][] {{1024}}, "Float");

  @AfterEach
  void stop() throws InterruptedException {
    if (reporter != null) {
      reporter.kill();
    }
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    daemons.forEach(Daemon::close);
  }

  private Daemon startDaemon(int port) {
    Daemon daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(port).dataDir(dataDir)
        // Far beyond the ring, so a daemon holding exactly the ring window shows it got nothing older.
        .window(CAPACITY * 8).build()).start();
    daemons.add(daemon);
    return daemon;
  }

  private void startReporter(int port) {
    channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    reporter = Reporter.builder(recorder, RankIdentity.newBuilder().setJobId(JOB).setGlobalRank(0).setWorldSize(1)
        .setHostname("node0").setPid(4242).build(), channel).settings(FAST).start();
  }

  /** Issues {@code count} all_reduces, completing all but the last {@code leaveOpen}; returns their handles. */
  private long[] issue(int count, int leaveOpen) {
    long[] handles = new long[count];
    for (int i = 0; i < count; i++) {
      handles[i] = recorder.enqueue(world, allReduce, tensors, tensors, null);
      if (i < count - leaveOpen) {
        recorder.completed(handles[i]);
      }
    }
    return handles;
  }

  private static Optional<RankEvidence> rankOnDaemon(Daemon daemon) {
    return daemon.registry().find(JOB)
        .map(job -> job.evidence(Map.of(), 0, Duration.ofSeconds(1), "not asked").ranks().get(0));
  }

  private static List<CollectiveRecord> recordsOnDaemon(Daemon daemon) {
    return rankOnDaemon(daemon).map(RankEvidence::records).orElse(List.of());
  }

  private static RankStatus statusOnDaemon(Daemon daemon, ManagedChannel channel) {
    return DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
        .getJobStatus(GetJobStatusRequest.newBuilder().setJobId(JOB).setIncludeRanks(true).build()).getRanks(0);
  }

  @Test
  void reconnectsToADaemonRestartedOnTheSamePortAndRefillsItWithTheWholeRingWindow() {
    Daemon first = startDaemon(0);
    int port = first.port();
    startReporter(port);
    await().atMost(WAIT).until(reporter::isConnected);
    issue(40, 2);
    await().atMost(WAIT).untilAsserted(() -> assertThat(recordsOnDaemon(first)).isEqualTo(Records.all(recorder)));

    first.close();
    // Nothing listens for a while: the reporter keeps retrying (each attempt rewinds its cursor) and stays out.
    await().during(Duration.ofMillis(300)).atMost(WAIT).until(() -> !reporter.isConnected());
    // While the daemon is away the rank wraps its ring: records 0..25 (shipped before) fall out, and
    // 40..89 were never shipped at all.
    long[] whileDown = issue(50, 3);
    recorder.started(whileDown[whileDown.length - 1]);

    Daemon second = startDaemon(port);
    await().atMost(WAIT).until(() -> reporter.connectCount() == 2);
    await().atMost(WAIT).untilAsserted(() -> assertThat(recordsOnDaemon(second)).isEqualTo(Records.all(recorder)));
    List<CollectiveRecord> held = recordsOnDaemon(second);
    assertThat(held).extracting(CollectiveRecord::getRecordId).first().isEqualTo(90L - CAPACITY);
    assertThat(held).extracting(CollectiveRecord::getRecordId).last().isEqualTo(89L);
    assertThat(held).hasSize(CAPACITY);

    // Records still in flight at the reconnect keep being followed on the new stream.
    recorder.completed(whileDown[whileDown.length - 1]);
    await().atMost(WAIT).untilAsserted(() -> assertThat(recordsOnDaemon(second)).last()
        .extracting(CollectiveRecord::getState).isEqualTo(CollectiveState.COMPLETED));
    assertThat(recordsOnDaemon(second)).isEqualTo(Records.all(recorder));
    // Everything overwritten while the daemon was away had been shipped before it left.
    assertThat(reporter.droppedRecords()).isZero();
    assertThat(statusOnDaemon(second, channel).getDroppedRecords()).isZero();
  }

  @Test
  void longOutageKeepsOnlyTheRingAndReportsEveryOverwrittenRecordAsDroppedOnReconnect() {
    // Learn a free port, then leave nothing listening on it.
    Daemon probe = startDaemon(0);
    int port = probe.port();
    probe.close();
    startReporter(port);

    // Far more records than the ring holds, and more events than the event queue takes, with no daemon.
    int total = 200_000;
    long[] handles = issue(total, 5);
    int events = 100;
    for (int i = 0; i < events; i++) {
      reporter.report(RankEvent.newBuilder().setKind(RankEvent.Kind.COMM_ERROR).setMessage("event " + i)
          .setSeq(-1).build());
    }
    assertThat(reporter.connectCount()).isZero();
    assertThat(reporter.droppedRecords()).isLessThanOrEqualTo(total - CAPACITY);
    assertThat(reporter.droppedEvents()).isEqualTo(events - MAX_QUEUED_EVENTS);

    Daemon daemon = startDaemon(port);
    await().atMost(WAIT).until(reporter::isConnected);
    await().atMost(WAIT).untilAsserted(() -> assertThat(recordsOnDaemon(daemon)).isEqualTo(Records.all(recorder)));

    // The ring was the only record buffer: exactly its window arrived, every older record was counted as
    // dropped, and the window the daemon holds (8x the ring) got nothing older.
    List<CollectiveRecord> held = recordsOnDaemon(daemon);
    assertThat(held).hasSize(CAPACITY);
    assertThat(held.get(0).getRecordId()).isEqualTo(total - CAPACITY);
    assertThat(held.get(CAPACITY - 1).getRecordId()).isEqualTo(handles[total - 1]);
    assertThat(reporter.droppedRecords()).isEqualTo(total - CAPACITY);
    // The bounded event queue kept the first events and dropped (and counted) the rest.
    assertThat(rankOnDaemon(daemon).orElseThrow().events()).extracting(RankEvent::getMessage)
        .containsExactly("event 0", "event 1", "event 2", "event 3", "event 4", "event 5", "event 6",
            "event 7");
    assertThat(reporter.droppedEvents()).isEqualTo(events - MAX_QUEUED_EVENTS);
    // The daemon learned the drop count on reconnect.
    await().atMost(WAIT).untilAsserted(() -> assertThat(statusOnDaemon(daemon, channel).getDroppedRecords())
        .isEqualTo(reporter.droppedRecords()));
    assertThat(statusOnDaemon(daemon, channel).getLiveness()).isEqualTo(RankStatus.Liveness.CONNECTED);
  }
}
