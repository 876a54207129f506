package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.agent.FakeTorchRank.Role;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.proto.v1.RankStatus;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportText;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/**
 * {@code --local-ranks auto} through the real {@code /proc}: separate processes started with the environment
 * torchrun gives its workers are found with their real pids, and a rank restarted as a new process is followed
 * to it, the daemon seeing the same job throughout; a hang's report names the culprit's real process.
 */
@EnabledOnOs(OS.LINUX)
class RankDiscoveryEndToEndTest extends AgentEndToEnd {
  private static final String JOB = "llama-7b.run4";
  private static final Duration STARTUP = Duration.ofSeconds(30);

  /** Unique per test, so processes of a build running alongside are not taken for this test's ranks. */
  private final String runId = "frdiag-test-" + UUID.randomUUID();

  @Test
  void findsTheRanksOfThisNodeAndFollowsARestartedOne() throws Exception {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dir.resolve("data"))
        .stallTimeout(Duration.ofSeconds(60)).build()).start();
    List<ChildProcess> ranks = new ArrayList<>(List.of(worker(0, 0), worker(1, 0), worker(2, 0)));
    NodeAgent agent = startAgent();

    await("ranks found").atMost(STARTUP).untilAsserted(() -> assertThat(agent.processes()).isEqualTo(pids(ranks)));
    Job job = awaitJob();
    await("the daemon knows their pids").atMost(STARTUP).untilAsserted(() ->
        assertThat(daemonPids(job)).isEqualTo(pids(ranks)));

    // torchrun restarts rank 1: the old process dies, a new one takes the same rank.
    ranks.get(1).close();
    ranks.set(1, worker(1, 1));

    await("restarted rank followed").atMost(STARTUP).untilAsserted(() ->
        assertThat(agent.processes()).isEqualTo(pids(ranks)));
    await("the daemon knows the new pid").atMost(STARTUP).untilAsserted(() -> {
      assertThat(daemonPids(job)).isEqualTo(pids(ranks));
      assertThat(job.summary().getRanksConnected()).isEqualTo(3);
    });
    assertThat(daemon.registry().all()).as("one job throughout").hasSize(1);
    assertThat(daemon.registry().find(JOB)).containsSame(job);
    assertThat(daemon.store().latest(JOB)).as("a restart is not an incident").isEmpty();
  }

  @Test
  void theReportNamesTheCulpritsRealProcess() throws Exception {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dir.resolve("data"))
        .stallTimeout(Duration.ofSeconds(60)).snapshotDeadline(Duration.ofSeconds(10)).build()).start();
    List<ChildProcess> ranks = new ArrayList<>();
    for (Role role : List.of(Role.WAITING, Role.WAITING, Role.NEVER_ISSUED)) {
      int rank = ranks.size();
      ChildProcess p = ChildProcess.java("rank" + rank, FakeTorchRank.class.getName(), List.of(Integer.toString(rank),
          "3", role.name(), dir + "/nccl_pipe_", dir + "/nccl_trace_rank_", log(rank).toString()), env(rank, 0));
      processes.add(p);
      ranks.add(p);
    }
    for (ChildProcess p : ranks) {
      p.awaitLine("ready", STARTUP);
    }
    NodeAgent agent = startAgent(b -> b.pipePrefix(dir + "/nccl_pipe_").dumpWait(Duration.ofSeconds(6))
        .logFiles(List.of(log(0), log(1), log(2))));
    await("ranks found and connected").atMost(STARTUP).until(() -> agent.processes().equals(pids(ranks))
        && agent.allConnected());

    ranks.get(0).command("timeout");

    await("report").atMost(STARTUP).until(() -> daemon.store().latest(JOB).isPresent());
    Report report = daemon.store().latest(JOB).orElseThrow();
    assertThat(report.culpritRanks()).containsExactly(2);
    assertThat(report.culprits().get(0).pid()).isEqualTo(ranks.get(2).process().pid());
    assertThat(ReportText.plain(report)).contains("rank 2  host node07  pid " + ranks.get(2).process().pid());
    assertThat(report.scheduler()).containsEntry("torchelastic.run_id", runId)
        .containsEntry("torchelastic.restart_count", "0");
  }

  private Path log(int rank) {
    return dir.resolve("train-" + rank + ".log");
  }

  /** A process with the environment torchrun gives worker {@code rank} of a three-rank job. */
  private ChildProcess worker(int rank, int restart) throws Exception {
    ChildProcess p = ChildProcess.java("rank" + rank + "." + restart, Idle.class.getName(), List.of(),
        env(rank, restart));
    processes.add(p);
    p.awaitLine("ready", STARTUP);
    return p;
  }

  private Map<String, String> env(int rank, int restart) {
    return Map.of("RANK", Integer.toString(rank), "LOCAL_RANK", Integer.toString(rank), "WORLD_SIZE", "3",
        "LOCAL_WORLD_SIZE", "3", "GROUP_RANK", "0", "TORCHELASTIC_RUN_ID", runId,
        "TORCHELASTIC_RESTART_COUNT", Integer.toString(restart));
  }

  private NodeAgent startAgent() {
    return startAgent(b -> b);
  }

  private NodeAgent startAgent(UnaryOperator<AgentSettings.Builder> more) {
    ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    AgentSettings settings = more.apply(AgentSettings.builder().jobId(JOB).hostname("node07").discoverRanks(true)
        .runId(runId).dumpPrefix(dir + "/nccl_trace_rank_").pollInterval(Duration.ofMillis(50))
        .stream(quickStreams()))
        .build();
    NodeAgent agent = new NodeAgent(settings, channel);
    resources.add(agent);
    return agent;
  }

  private Job awaitJob() {
    await("job registered").atMost(STARTUP).until(() -> daemon.registry().find(JOB).isPresent());
    return daemon.registry().find(JOB).orElseThrow();
  }

  private static Map<Integer, Long> pids(List<ChildProcess> ranks) {
    Map<Integer, Long> out = new TreeMap<>();
    for (int r = 0; r < ranks.size(); r++) {
      out.put(r, ranks.get(r).process().pid());
    }
    return out;
  }

  private static Map<Integer, Long> daemonPids(Job job) {
    return job.rankStatuses().stream().filter(s -> s.getLiveness() == RankStatus.Liveness.CONNECTED)
        .collect(Collectors.toMap(RankStatus::getGlobalRank, RankStatus::getPid, (a, b) -> a, TreeMap::new));
  }

  /** A stand-in for a training process: prints {@code ready}, then waits until its stdin closes. */
  public static final class Idle {
    private Idle() {}

    public static void main(String[] args) throws Exception {
      System.out.println("ready");
      System.out.flush();
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
        while (in.readLine() != null) {
          // Nothing to do: a rank that trains.
        }
      }
    }
  }
}
