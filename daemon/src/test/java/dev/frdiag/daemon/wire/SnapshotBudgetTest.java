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
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.testing.fakes.FakeCollector;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job's ranks hold the daemon to its record budget in snapshots too: the daemon asks for no more than the job's
 * window, a rank sends only its newest records, and a reply that ignores the ask is cut to the newest.
 */
class SnapshotBudgetTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  @TempDir
  Path dataDir;

  @Test
  void aRankAnswersWithOnlyTheNewestRecordsTheDaemonAsksFor() throws Exception {
    FlightRecorder recorder = new FlightRecorder(200, FlightRecorder::epochNanos, 600_000);
    ProcessGroupHandle world = recorder.registerProcessGroup("0", "default_pg", new int[] {0});
    OpName allReduce = recorder.op("all_reduce");
    TensorList tensors = recorder.tensors(new long[][] {{1024}}, "Float");
    for (int i = 0; i < 150; i++) {
      recorder.completed(recorder.enqueue(world, allReduce, tensors, tensors, null));
    }
    try (FakeCollector daemon = new FakeCollector()) {
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
      Reporter reporter = Reporter.builder(recorder, RankIdentity.newBuilder().setJobId("j").setGlobalRank(0)
          .setWorldSize(1).setHostname("node0").setPid(1).build(), channel)
          .settings(ReporterSettings.builder().maxBatchDelay(Duration.ofMillis(20)).build()).start();
      try {
        await().atMost(WAIT).until(reporter::isConnected);
        daemon.requestDump(0, 7, 5_000, 40);
        await().atMost(WAIT).until(() -> !daemon.of(0, RankMessage.BodyCase.DUMP_REPLY).isEmpty());

        DumpReply reply = daemon.of(0, RankMessage.BodyCase.DUMP_REPLY).get(0).getDumpReply();
        assertThat(reply.getRequestId()).isEqualTo(7);
        assertThat(reply.getRecordsList()).extracting(CollectiveRecord::getRecordId)
            .as("the newest 40 of 150, oldest first").startsWith(110L).endsWith(149L).hasSize(40);
      } finally {
        reporter.kill();
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void aJobTooLargeForItsShareAsksItsRanksForNoMoreThanItsWindow() throws Exception {
    // 64 records over 4 ranks: every rank keeps the floor of 32, and a snapshot asks for 32.
    try (InProcessDaemon daemon = new InProcessDaemon(DaemonSettings.builder().dataDir(dataDir)
        .limits(Limits.builder().maxRecordsPerJob(64).build()).build())) {
      ManagedChannel channel = daemon.channel();
      RankConnection rank = new RankConnection(channel).send(RankMessage.newBuilder().setHello(Hello.newBuilder()
          .setIdentity(RankIdentity.newBuilder().setJobId("big").setGlobalRank(0).setWorldSize(4)
              .setHostname("node0").setPid(1))
          .addProcessGroups(ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1).addRanks(2).addRanks(3)
              .setGlobalRankStride(1))).build());
      assertThat(rank.next().hasWelcome()).isTrue();
      DiagnosisGrpc.newStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS).diagnoseNow(
          DiagnoseNowRequest.newBuilder().setJobId("big").setSnapshotDeadlineMs(2_000).build(),
          new io.grpc.stub.StreamObserver<>() {
            @Override
            public void onNext(dev.frdiag.proto.v1.ReportEnvelope value) {}

            @Override
            public void onError(Throwable t) {}

            @Override
            public void onCompleted() {}
          });

      DumpRequest request = rank.next().getDumpRequest();
      assertThat(request.getMaxRecords()).isEqualTo(Limits.MIN_WINDOW);
    }
  }
}
