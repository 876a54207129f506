package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import dev.frdiag.agent.FakeTorchRank.Role;
import dev.frdiag.agent.probe.NodeProbe;
import dev.frdiag.agent.probe.NodeProbes;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetReportRequest;
import dev.frdiag.proto.v1.RankStatus;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.report.Report;
import dev.frdiag.testing.metrics.PrometheusScrape;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The node agent between a real daemon and separate processes that behave like PyTorch ranks: a watchdog line in
 * a training log opens an incident, the agent triggers fresh dumps through the ranks' debug pipes, ships them,
 * and the report names the rank that diverged.
 */
class NodeAgentEndToEndTest extends AgentEndToEnd {
  private static final String JOB = "llama-7b.run3";
  private static final Duration STARTUP = Duration.ofSeconds(30);
  private static final Duration INCIDENT = Duration.ofSeconds(30);
  /**
   * How long a fake rank (a separate JVM) may take to notice its pipe and dump. Generous, because on a loaded
   * machine that takes seconds; only the deaf rank's case waits it out.
   */
  private static final Duration DUMP_WAIT = Duration.ofSeconds(6);
  private static final Duration SNAPSHOT_DEADLINE = Duration.ofSeconds(10);

  @Test
  void reportsRankThatNeverIssuedTheCollective() throws Exception {
    daemon = startDaemon(0);
    List<ChildProcess> ranks = startRanks(Role.WAITING, Role.WAITING, Role.NEVER_ISSUED);
    NodeAgent agent = startAgent(daemon.port(), 3);
    await("agent connected").atMost(STARTUP).until(agent::allConnected);

    ranks.get(0).command("timeout");

    Report report = awaitReport(daemon);
    assertThat(report.trigger()).isEqualTo(Report.Trigger.WATCHDOG_TIMEOUT);
    assertThat(report.verdict()).isEqualTo(Verdict.HANG);
    assertThat(report.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(report.culpritRanks()).containsExactly(2);
    assertThat(report.collective().seq()).isEqualTo(FakeTorchRank.STUCK_SEQ);
    assertThat(report.collective().op()).isEqualTo("all_reduce");
    assertThat(report.evidence()).extracting(Evidence::kind)
        .contains(Evidence.Kind.NOT_ISSUED, Evidence.Kind.WAITING, Evidence.Kind.RANK_EVENT)
        .doesNotContain(Evidence.Kind.NO_SNAPSHOT);
    assertThat(report.evidence()).filteredOn(e -> e.kind() == Evidence.Kind.RANK_EVENT)
        .extracting(Evidence::ranks)
        .containsExactly(List.of(0));
    // Every rank answered its pipe: the timeline counts three fresh snapshots out of three.
    assertThat(report.timeline()).anySatisfy(t -> assertThat(t.event()).startsWith("3 of 3 snapshots received"));
    assertThat(report.culprits().get(0).stack()).contains("train_step (train.py:88)");
    for (ChildProcess rank : ranks) {
      rank.awaitLine("dumped", STARTUP);
    }

    // The same report through the Diagnosis service.
    ManagedChannel channel = channel(daemon.port());
    String json = DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
        .getReport(GetReportRequest.newBuilder().setReportId(report.reportId()).build()).getReportJson();
    assertThat(json).contains("\"symptom\" : \"CPU_STALL\"");
  }

  @Test
  void reportsRankThatDoesNotAnswerItsPipe() throws Exception {
    daemon = startDaemon(0);
    List<ChildProcess> ranks = startRanks(Role.WAITING, Role.WAITING, Role.DEAF);
    NodeAgent agent = startAgent(daemon.port(), 3);
    await("agent connected").atMost(STARTUP).until(agent::allConnected);

    ranks.get(1).command("timeout");

    Report report = awaitReport(daemon);
    assertThat(report.verdict()).isEqualTo(Verdict.HANG);
    assertThat(report.culpritRanks()).containsExactly(2);
    assertThat(report.symptom()).isEqualTo(Symptom.DEAD_RANK);
    assertThat(report.evidence()).filteredOn(e -> e.kind() == Evidence.Kind.RANK_LOST).singleElement()
        .satisfies(e -> assertThat(e.detail()).startsWith("Rank 2 sent no snapshot: dump failed: rank 2 did not"
            + " answer its dump pipe "));
    assertThat(report.evidence()).filteredOn(e -> e.kind() == Evidence.Kind.NO_SNAPSHOT)
        .extracting(Evidence::ranks)
        .containsExactly(List.of(2));
    assertThat(report.timeline()).anySatisfy(t -> assertThat(t.event()).startsWith("3 of 3 snapshots received"));
    ranks.get(0).awaitLine("dumped", STARTUP);
    ranks.get(1).awaitLine("dumped", STARTUP);
    assertThat(ranks.get(2).count("dumped")).isZero();
  }

  @Test
  void reconnectsWhenTheDaemonRestarts() throws Exception {
    daemon = startDaemon(0);
    int port = daemon.port();
    List<ChildProcess> ranks = startRanks(Role.WAITING, Role.NEVER_ISSUED);
    NodeAgent agent = startAgent(port, 2);
    await("agent connected").atMost(STARTUP).until(agent::allConnected);

    daemon.close();
    await("agent noticed the daemon is gone").atMost(INCIDENT).until(() -> !agent.allConnected());
    daemon = startDaemon(port);
    await("agent reconnected").atMost(INCIDENT).until(() -> agent.allConnected()
        && daemon.registry().find(JOB).map(j -> j.summary().getRanksConnected()).orElse(0) == 2);

    ranks.get(0).command("timeout");
    Report report = awaitReport(daemon);
    assertThat(report.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(report.culpritRanks()).containsExactly(1);
  }

  @Test
  void agentCommandSaysGoodbyeForEveryRankOnSigterm() throws Exception {
    goodbyesOnSigterm(false);
  }

  @Test
  void agentCommandWithFanInCarriesItsRanksOnOneNodeStreamAndStillSaysGoodbyeForEach() throws Exception {
    goodbyesOnSigterm(true);
  }

  private void goodbyesOnSigterm(boolean fanIn) throws Exception {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dir.resolve("data"))
        .stallTimeout(Duration.ofSeconds(60)).metricsPort(0).build()).start();
    List<String> args = new ArrayList<>(List.of(
        "--job", JOB, "--daemon", "127.0.0.1:" + daemon.port(), "--world-size", "4", "--local-ranks", "2-3",
        "--hostname", "node07", "--dump-prefix", dir + "/nccl_trace_rank_", "--poll-interval", "100ms"));
    if (fanIn) {
      args.add("--fan-in");
    }
    ChildProcess agent = ChildProcess.java("fr-agent", "dev.frdiag.agent.AgentMain", args);
    processes.add(agent);
    await("agent process connected").atMost(STARTUP).until(() -> daemon.registry().find(JOB)
        .map(j -> j.summary().getRanksConnected()).orElse(0) == 2
        && agent.output().stream().anyMatch(line -> line.contains("all 2 ranks connected")));
    Map<String, Double> streams = new HashMap<>(PrometheusScrape.samples(daemon.metricsPort()));
    streams.keySet().removeIf(name -> !name.startsWith("frdiag_streams{"));
    assertThat(streams).isEqualTo(fanIn ? Map.of("frdiag_streams{kind=\"node\"}", 1.0)
        : Map.of("frdiag_streams{kind=\"rank\"}", 2.0));

    agent.process().destroy();

    assertThat(agent.process().waitFor(30, TimeUnit.SECONDS)).as("exited after SIGTERM").isTrue();
    assertThat(agent.process().exitValue()).as("exit status after SIGTERM").isEqualTo(143);
    Job job = daemon.registry().find(JOB).orElseThrow();
    await("goodbyes").atMost(INCIDENT).until(() -> job.summary().getRanksFinished() == 2);
    assertThat(job.rankStatuses()).extracting(RankStatus::getGlobalRank, RankStatus::getHostname)
        .containsExactly(tuple(2, "node07"), tuple(3, "node07"));
  }

  private Daemon startDaemon(int port) {
    // The dumps are two minutes old, past the stall timeout; the agent sends no live progress, so the only
    // incident is the one the watchdog line opens.
    return new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(port).dataDir(dir.resolve("data"))
        .stallTimeout(Duration.ofSeconds(60)).snapshotDeadline(SNAPSHOT_DEADLINE).build()).start();
  }

  private List<ChildProcess> startRanks(Role... roles) throws Exception {
    List<ChildProcess> started = new ArrayList<>();
    for (int rank = 0; rank < roles.length; rank++) {
      ChildProcess p = ChildProcess.java("rank" + rank, FakeTorchRank.class, List.of(Integer.toString(rank),
          Integer.toString(roles.length), roles[rank].name(), dir + "/nccl_pipe_", dir + "/nccl_trace_rank_",
          dir.resolve("train-" + rank + ".log").toString()));
      processes.add(p);
      started.add(p);
    }
    for (ChildProcess p : started) {
      p.awaitLine("ready", STARTUP);
    }
    return started;
  }

  @Test
  void aDeviceFaultTheDriverLoggedOnTheCulpritsGpuMakesItsStallAGpuStall() throws Exception {
    daemon = startDaemon(0);
    List<ChildProcess> ranks = startRanks(Role.WAITING, Role.WAITING, Role.NEVER_ISSUED);
    // The node's dmesg holds an Xid 79 (the GPU fell off the bus) of rank 2's process, as the driver prints it.
    Path dmesg = dir.resolve("dmesg");
    Files.writeString(dmesg, "#!/bin/sh\necho '[ 8123.45] NVRM: Xid (PCI:0000:dc:00): 79, pid="
        + ranks.get(2).process().pid() + ", name=python3, GPU has fallen off the bus.'\n");
    Files.setPosixFilePermissions(dmesg, PosixFilePermissions.fromString("rwx------"));
    NodeContextCollector context = new NodeContextCollector(null, List.of(), Duration.ofMinutes(1),
        new NodeProbes(List.of(new NodeProbe("dmesg", List.of(dmesg.toString()))), Duration.ofSeconds(10)));
    NodeAgent agent = startAgent(daemon.port(), 3, context);
    await("agent connected").atMost(STARTUP).until(agent::allConnected);
    await("the background probe ran").atMost(STARTUP).until(() -> !context.collect(JOB, "node07",
        Duration.ofMinutes(1)).getFindingsList().isEmpty());

    ranks.get(0).command("timeout");

    Report report = awaitReport(daemon);
    assertThat(report.verdict()).isEqualTo(Verdict.HANG);
    assertThat(report.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(report.culpritRanks()).containsExactly(2);
    assertThat(report.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.GPU_XID);
      assertThat(e.detail()).contains("fallen off the bus");
    });
  }

  private NodeAgent startAgent(int port, int worldSize) {
    return startAgent(port, worldSize, null);
  }

  private NodeAgent startAgent(int port, int worldSize, NodeContextCollector context) {
    ManagedChannel channel = channel(port);
    AgentSettings settings = AgentSettings.builder().jobId(JOB).hostname("node07").worldSize(worldSize)
        .localRanks(IntStream.range(0, worldSize).boxed().toList())
        .dumpPrefix(dir + "/nccl_trace_rank_").pipePrefix(dir + "/nccl_pipe_")
        .logFiles(IntStream.range(0, worldSize).mapToObj(r -> dir.resolve("train-" + r + ".log")).toList())
        .pollInterval(Duration.ofMillis(50)).dumpWait(DUMP_WAIT)
        .stream(quickStreams())
        .build();
    NodeAgent agent = context == null ? new NodeAgent(settings, channel) : new NodeAgent(settings, channel, context);
    resources.add(agent);
    return agent;
  }

  private ManagedChannel channel(int port) {
    ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return channel;
  }

  private Report awaitReport(Daemon d) {
    await("report").atMost(INCIDENT).until(() -> d.store().latest(JOB).isPresent());
    return d.store().latest(JOB).orElseThrow();
  }
}
