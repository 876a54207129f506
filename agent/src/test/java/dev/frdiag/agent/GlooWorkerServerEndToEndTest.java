package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.report.Report;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A real daemon and a node agent in front of four worker servers that answer as the CPU build of torch 2.13 did
 * for a hung gloo job (recorded answers, test resources {@code torch-2.13-cpu/stall_dp_rank2_w4}): no NCCL
 * handler, no debug pipe, no dump file. The agent reads the generic recorder ({@code fr_trace_json}), the daemon's
 * stall timeout opens the incident from that progress, and the snapshots it asks for come from the worker servers:
 * every rank's whole ring reaches the daemon.
 */
class GlooWorkerServerEndToEndTest extends AgentEndToEnd {
  private static final String JOB = "gloo-stall";
  private static final String SCENARIO = "stall_dp_rank2_w4";
  private static final int WORLD = 4;
  private static final Duration STARTUP = Duration.ofSeconds(30);

  @Test
  void aGlooHangIsReportedWithEveryRanksRingFromTheWorkerServers() throws Exception {
    Map<Integer, Integer> rings = new TreeMap<>();
    for (int rank = 0; rank < WORLD; rank++) {
      Path socket = dir.resolve("worker_" + rank + ".sock");
      resources.add(FakeWorkerServer.serveRecorded(socket, SCENARIO, rank));
      rings.put(rank, DumpReader.create().parse(FakeWorkerServer.resource("/torch-2.13-cpu/" + SCENARIO
          + "/fr_trace_json_rank_" + rank + ".json"), socket, rank).records().size());
    }
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dir.resolve("data"))
        .stallTimeout(Duration.ofSeconds(2)).snapshotDeadline(Duration.ofSeconds(5)).build()).start();
    ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
    resources.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    AgentSettings settings = AgentSettings.builder().jobId(JOB).hostname("node01").worldSize(WORLD)
        .localRanks(IntStream.range(0, WORLD).boxed().toList()).dumpPrefix(dir + "/fr_trace_rank_")
        .workerSocket(dir + "/worker_{rank}.sock").progressInterval(Duration.ofMillis(200))
        .pollInterval(Duration.ofMillis(100)).dumpWait(Duration.ofSeconds(3))
        .stream(quickStreams())
        .build();
    NodeAgent agent = new NodeAgent(settings, channel);
    resources.add(agent);
    await("agent connected").atMost(STARTUP).until(agent::allConnected);

    await("report").atMost(STARTUP).until(() -> daemon.store().latest(JOB).isPresent());

    Report report = daemon.store().latest(JOB).orElseThrow();
    assertThat(report.trigger()).isEqualTo(Report.Trigger.STALL);
    assertThat(report.timeline()).anySatisfy(t -> assertThat(t.event()).startsWith("4 of 4 snapshots received"));
    // The recorded hang: rank 2 sleeps before dp group '3' [0, 2] #6, where rank 0 waits; ranks 1 and 3 wait in the
    // world group behind them. Each rank vouches only for itself in gloo's groups; the analysis joins them.
    assertThat(report.verdict()).isEqualTo(Verdict.HANG);
    assertThat(report.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(report.culpritRanks()).containsExactly(2);
    // Live, the daemon watched the op wait the stall timeout: no doubt about one snapshot's age.
    assertThat(report.confidence()).isEqualTo(0.9);
    assertThat(report.evidence()).noneMatch(e -> e.kind() == Evidence.Kind.SNAPSHOT_AGE);
    // The agent shipped each rank's stacks from its worker server with its snapshot: the report says where 2 sleeps.
    assertThat(report.culprits()).singleElement()
        .satisfies(c -> assertThat(c.stuckAt()).isEqualTo("sleep_forever (train.py:106)"));
    Job job = daemon.registry().find(JOB).orElseThrow();
    JobEvidence evidence = job.evidence(Map.of(), System.currentTimeMillis() * 1_000_000L, Duration.ofSeconds(2),
        "not asked");
    Map<Integer, Integer> kept = new TreeMap<>();
    for (RankEvidence r : evidence.ranks()) {
      kept.put(r.rank(), r.records().size());
    }
    assertThat(kept).isEqualTo(rings);
    assertThat(evidence.ranks()).filteredOn(r -> r.rank() == 0).singleElement().satisfies(r -> {
      assertThat(r.groups()).anySatisfy(g -> {
        assertThat(g.getName()).isEqualTo("3");
        assertThat(g.getMembersFromRecords()).isTrue();
      });
      assertThat(r.records().get(r.records().size() - 1).getProcessGroup()).isEqualTo("3");
    });
  }

}
