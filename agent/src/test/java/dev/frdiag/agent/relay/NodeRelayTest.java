package dev.frdiag.agent.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.ContextAck;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetJobStatusRequest;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.testing.incidents.IncidentWatch;
import dev.frdiag.testing.metrics.PrometheusScrape;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Ranks that reach the daemon through their node's relay: one stream per node, and the same diagnosis. */
class NodeRelayTest {
  private static final Topology TOPOLOGY = Topology.defaults();

  @TempDir
  Path dir;

  private Daemon daemon;
  private ManagedChannel toDaemon;
  private final ScheduledExecutorService flushes = Executors.newSingleThreadScheduledExecutor();
  private final Map<String, NodeRelay> relays = new HashMap<>();
  private final Map<String, ManagedChannel> toRelays = new HashMap<>();
  private final List<Server> relayServers = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dir.resolve("data"))
        .stallTimeout(Duration.ofSeconds(1)).metricsPort(0).build()).start();
    toDaemon = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
    for (int host = 0; host < TOPOLOGY.hostCount(); host++) {
      String name = TOPOLOGY.hostOf(host * TOPOLOGY.ranksPerHost());
      NodeRelay relay = new NodeRelay(toDaemon, name, flushes, NodeRelay.DEFAULT_FLUSH_DELAY, 4 << 20);
      Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(relay)
          .build().start();
      relayServers.add(server);
      relays.put(name, relay);
      toRelays.put(name, NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build());
    }
  }

  @AfterEach
  void stop() throws Exception {
    for (ManagedChannel c : toRelays.values()) {
      c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    for (Server s : relayServers) {
      s.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    toDaemon.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    flushes.shutdownNow();
    daemon.close();
  }

  @Test
  void aGpuStallReachedThroughNodeRelaysIsDiagnosedAsWhenEachRankHasItsOwnStream() throws Exception {
    BlockingQueue<ReportEnvelope> reports = IncidentWatch.of(toDaemon, "relayed");
    try (RankSimulator sim = simulator(Fault.gpuStall(5, 20))) {
      assertThat(sim.awaitConnected(Duration.ofSeconds(20))).isTrue();
      // Every rank's stream went through its own host's relay.
      for (int host = 0; host < TOPOLOGY.hostCount(); host++) {
        assertThat(relays.get(TOPOLOGY.hostOf(host * TOPOLOGY.ranksPerHost())).rankStreams())
            .isEqualTo(TOPOLOGY.ranksPerHost());
      }
      // ... and the daemon holds one stream per node, none per rank.
      assertThat(streams("node")).isEqualTo(TOPOLOGY.hostCount());
      assertThat(streams("rank")).isZero();
      sim.start();
      ReportEnvelope envelope = reports.poll(60, TimeUnit.SECONDS);
      assertThat(envelope).as("a report within 60 s").isNotNull();
      Report report = ReportJson.read(envelope.getReportJson());
      assertThat(report.symptom()).isEqualTo(Symptom.GPU_STALL);
      assertThat(report.culpritRanks()).containsExactly(5);
      // Every rank is accounted for through the relays: each asked rank's snapshot came back, and the others'
      // windows, current as of their last heartbeat, stood in.
      List<String> events = report.timeline().stream().map(Report.TimelineEntry::event).toList();
      java.util.regex.Matcher requested = java.util.regex.Pattern.compile("(?:snapshots requested from (\\d+) "
          + "connected ranks [^;]*)?(?:(?:; |no snapshot requested: )the windows of (\\d+) \\w+ ranks stand for "
          + "theirs.*)?").matcher(events.stream().filter(e -> e.contains("snapshot")).findFirst().orElseThrow());
      assertThat(requested.matches()).isTrue();
      int asked = requested.group(1) == null ? 0 : Integer.parseInt(requested.group(1));
      int stoodIn = requested.group(2) == null ? 0 : Integer.parseInt(requested.group(2));
      assertThat(asked + stoodIn).isEqualTo(TOPOLOGY.worldSize());
      if (asked > 0) {
        assertThat(events).anySatisfy(e -> assertThat(e).startsWith(asked + " of " + asked + " snapshots received"));
      }
    }
  }

  @Test
  void ranksThatFinishThroughARelayAreFinishedAndTheirRelayForgetsThem() throws Exception {
    try (RankSimulator sim = simulator(Fault.none())) {
      assertThat(sim.awaitConnected(Duration.ofSeconds(20))).isTrue();
    }
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      JobSummary summary = DiagnosisGrpc.newBlockingStub(toDaemon).withDeadlineAfter(5, TimeUnit.SECONDS)
          .getJobStatus(GetJobStatusRequest.newBuilder().setJobId("relayed").build()).getSummary();
      assertThat(summary.getRanksFinished()).isEqualTo(TOPOLOGY.worldSize());
      assertThat(summary.getRanksLost()).isZero();
    });
    assertThat(relays.values()).allSatisfy(r -> assertThat(r.rankStreams()).isZero());
  }

  @Test
  void ranksWhoseRelayLosesTheDaemonAreLostAndRejoinWhenItIsBack() throws Exception {
    try (RankSimulator sim = simulator(Fault.none())) {
      assertThat(sim.awaitConnected(Duration.ofSeconds(20))).isTrue();
      int port = daemon.port();
      daemon.close();
      // A daemon on the same port again: the relays open new node streams and every rank says Hello anew.
      daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(port)
          .dataDir(dir.resolve("data")).stallTimeout(Duration.ofSeconds(1)).build()).start();
      await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() -> {
        JobSummary summary = DiagnosisGrpc.newBlockingStub(toDaemon).withDeadlineAfter(5, TimeUnit.SECONDS)
            .getJobStatus(GetJobStatusRequest.newBuilder().setJobId("relayed").build()).getSummary();
        assertThat(summary.getRanksConnected()).isEqualTo(TOPOLOGY.worldSize());
      });
    }
  }

  @Test
  void nodeContextPostedThroughARelayReachesTheDaemonAndItsRefusalComesBack() {
    // fr-agent --fan-in posts its node's context through the relay it serves its ranks from.
    var stub = CollectorGrpc.newBlockingStub(toRelays.get("node00")).withDeadlineAfter(5, TimeUnit.SECONDS);
    assertThat(stub.reportContext(NodeContext.newBuilder().setJobId("relayed").setHostname("node00").build()))
        .isEqualTo(ContextAck.getDefaultInstance());
    assertThatThrownBy(() -> stub.reportContext(NodeContext.newBuilder().setJobId("relayed").build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription()).isEqualTo("hostname must be 1-255 characters");
        });
  }

  /** The daemon's frdiag_streams gauge for {@code kind}, as Prometheus scrapes it; 0 before its first use. */
  private double streams(String kind) throws Exception {
    return PrometheusScrape.samples(daemon.metricsPort()).getOrDefault("frdiag_streams{kind=\"" + kind + "\"}", 0.0);
  }

  private RankSimulator simulator(Fault fault) {
    return RankSimulator.builder().topology(TOPOLOGY).fault(fault).jobId("relayed").channel(toDaemon)
        .rankChannels(rank -> toRelays.get(TOPOLOGY.hostOf(rank))).stepInterval(Duration.ofMillis(10))
        .reporterSettings(ReporterSettings.builder().heartbeatInterval(Duration.ofMillis(200))
            .maxBatchDelay(Duration.ofMillis(50)).build()).build();
  }
}
