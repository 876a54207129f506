package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.analysis.Evidence;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.report.Report;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A real daemon, two node agents and sixteen separate rank processes that train: when one rank stops issuing
 * collectives, the daemon's stall timeout opens the incident from the progress the agents send (no watchdog line,
 * nobody asking), and the report names that rank and its process.
 *
 * <p>Each fake rank is its own process, so the pid the report names is told apart from its neighbours'.
 */
class NodeAgentLiveProgressTest extends AgentEndToEnd {
  private static final String JOB = "gpt-13b.live";
  private static final int WORLD = 16;
  private static final int CULPRIT = 5;
  private static final long PERIOD_MS = 100;
  private static final Duration STALL_TIMEOUT = Duration.ofSeconds(2);
  private static final Duration STARTUP = Duration.ofSeconds(60);


  @Test
  void reportsRankThatStoppedIssuingFromWorkerServerProgress() throws Exception {
    Report report = stallOneRank(true);
    assertThat(report.trigger()).isEqualTo(Report.Trigger.STALL);
  }

  @Test
  void reportsRankThatStoppedIssuingFromPeriodicPipeDumps() throws Exception {
    Report report = stallOneRank(false);
    assertThat(report.trigger()).isEqualTo(Report.Trigger.STALL);
  }

  private Report stallOneRank(boolean workerServers) throws Exception {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dir.resolve("data"))
        .stallTimeout(STALL_TIMEOUT).snapshotDeadline(Duration.ofSeconds(4)).build()).start();
    long start = System.currentTimeMillis();
    String sockets = workerServers ? dir + "/torch_worker_{rank}.sock" : "none";
    for (int rank = 0; rank < WORLD; rank++) {
      processes.add(ChildProcess.java("rank" + rank, FakeTrainingRanks.class, List.of(Integer.toString(WORLD),
          Long.toString(start), Long.toString(PERIOD_MS), sockets, dir + "/nccl_pipe_", dir + "/nccl_trace_rank_",
          Integer.toString(rank))));
    }
    for (ChildProcess p : processes) {
      p.awaitLine("ready", STARTUP);
    }
    NodeAgent node1 = startAgent("node01", IntStream.range(0, 8).boxed().toList(), workerServers);
    NodeAgent node2 = startAgent("node02", IntStream.range(8, 16).boxed().toList(), workerServers);
    await("agents connected").atMost(STARTUP).until(() -> node1.allConnected() && node2.allConnected()
        && daemon.registry().find(JOB).map(j -> j.summary().getRanksConnected()).orElse(0) == WORLD);
    // A rank's groups are announced with its first progress: from then on the daemon sees it train.
    await("live progress from every rank").atMost(STARTUP).until(() -> daemon.registry().find(JOB)
        .map(j -> IntStream.range(0, WORLD).allMatch(r -> j.knowsGroup(r, "0"))).orElse(false));
    assertThat(daemon.store().latest(JOB)).as("no incident while every rank trains").isEmpty();

    // Every rank stops at the same collective: the culprit issues nothing more, the others wait in the next one.
    long stallAt = System.currentTimeMillis() + 200;
    for (int rank = 0; rank < WORLD; rank++) {
      processes.get(rank).command("stall " + rank + " " + (rank == CULPRIT ? "cpu" : "gpu") + " " + stallAt);
    }
    await("report").atMost(STALL_TIMEOUT.plusSeconds(5)).pollInterval(Duration.ofMillis(50))
        .until(() -> daemon.store().latest(JOB).isPresent());
    Report report = daemon.store().latest(JOB).orElseThrow();
    assertThat(report.verdict()).isEqualTo(Verdict.HANG);
    assertThat(report.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(report.culpritRanks()).containsExactly(CULPRIT);
    assertThat(report.culprits().get(0).pid()).isEqualTo(processes.get(CULPRIT).process().pid());
    assertThat(report.culprits().get(0).host()).isEqualTo("node01");
    assertThat(report.evidence()).extracting(Evidence::kind).doesNotContain(Evidence.Kind.RANK_EVENT);
    return report;
  }

  private NodeAgent startAgent(String host, List<Integer> ranks, boolean workerServers) {
    ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    AgentSettings settings = AgentSettings.builder().jobId(JOB).hostname(host).worldSize(WORLD).localRanks(ranks)
        .dumpPrefix(dir + "/nccl_trace_rank_").pipePrefix(dir + "/nccl_pipe_")
        .workerSocket(workerServers ? dir + "/torch_worker_{rank}.sock" : null)
        .progressInterval(Duration.ofMillis(200))
        .pipeDumpInterval(workerServers ? null : Duration.ofMillis(400))
        .pollInterval(Duration.ofMillis(100)).dumpWait(Duration.ofSeconds(3))
        .stream(quickStreams())
        .build();
    NodeAgent agent = new NodeAgent(settings, channel);
    resources.add(agent);
    return agent;
  }
}
