package dev.frdiag.daemon;

import dev.frdiag.daemon.settings.DaemonSettings;
import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.Evidence;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.readers.context.ContextFindings;
import dev.frdiag.readers.ib.IbSnapshot;
import dev.frdiag.readers.ib.IbSysfsReader;
import dev.frdiag.readers.ib.IbWindow;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.testing.incidents.IncidentWatch;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A simulated fabric hang with a node's InfiniBand counters posted as context: counter movement on one NIC makes the
 * diagnosis name that host, NIC and port; quiet counters keep it from naming any link.
 */
class FabricContextEndToEndTest {
  @TempDir
  Path dir;

  @Test
  void linkFlapOnOneNodeNamesThatHostNicAndPort() throws Exception {
    Path sysfs = fakeSysfs();
    IbSysfsReader reader = new IbSysfsReader(sysfs, Clock.systemUTC());
    IbSnapshot before = reader.snapshot();
    bump(sysfs, "link_downed", 1);
    bump(sysfs, "symbol_error", 37);
    Report report = fabricHangWithContext(IbWindow.between(before, reader.snapshot()));

    assertThat(report.symptom()).isEqualTo(Symptom.FABRIC);
    assertThat(report.culpritRanks()).isEmpty();
    assertThat(report.culpritHosts()).containsExactly("node01");
    assertThat(report.headline()).contains("node01 mlx5_0 port 1");
    assertThat(report.evidence().get(0).kind()).isEqualTo(Evidence.Kind.LINK_FAULT);
    assertThat(report.evidence().get(0).detail()).contains("node01 mlx5_0:1", "link_downed");
    // The report's picture puts the counters on the port they were read from.
    assertThat(report.fabric().hosts().get(0).name()).isEqualTo("node01");
    assertThat(report.fabric().hosts().get(0).nics()).extracting(nic -> nic.name(),
        nic -> nic.ports().get(0).marks().stream().map(m -> m.kind()).distinct().toList()).containsExactly(
            org.assertj.core.groups.Tuple.tuple("mlx5_0", java.util.List.of(Evidence.Kind.LINK_FAULT)),
            org.assertj.core.groups.Tuple.tuple("mlx5_1", java.util.List.of(Evidence.Kind.QUIET_COUNTERS)));
  }

  @Test
  void quietCountersKeepAFabricVerdictFromNamingALink() throws Exception {
    Path sysfs = fakeSysfs();
    IbSysfsReader reader = new IbSysfsReader(sysfs, Clock.systemUTC());
    IbSnapshot before = reader.snapshot();
    Report report = fabricHangWithContext(IbWindow.between(before, reader.snapshot()));

    assertThat(report.symptom()).isEqualTo(Symptom.FABRIC);
    assertThat(report.culpritHosts()).isEmpty();
    assertThat(report.confidence()).isLessThanOrEqualTo(0.4);
    assertThat(report.evidence()).anySatisfy(e -> assertThat(e.kind()).isEqualTo(Evidence.Kind.QUIET_COUNTERS));
  }

  private Report fabricHangWithContext(IbWindow window) throws Exception {
    try (Daemon daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0)
        .dataDir(dir.resolve("data")).stallTimeout(Duration.ofSeconds(1)).build()).start()) {
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
      try {
        BlockingQueue<ReportEnvelope> reports = IncidentWatch.of(channel, "fab");
        // What node01's agent would post: its counters over the window.
        CollectorGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS).reportContext(
            NodeContext.newBuilder().setJobId("fab").setHostname("node01")
                .addAllFindings(ContextFindings.fromIb(window, "node01")).build());
        try (RankSimulator sim = RankSimulator.builder().topology(Topology.defaults()).fault(Fault.fabric(3))
            .jobId("fab").channel(channel).stepInterval(Duration.ofMillis(10))
            .reporterSettings(ReporterSettings.builder().heartbeatInterval(Duration.ofMillis(200))
                .maxBatchDelay(Duration.ofMillis(50)).build()).build()) {
          assertThat(sim.awaitConnected(Duration.ofSeconds(20))).isTrue();
          sim.start();
          ReportEnvelope envelope = reports.poll(60, TimeUnit.SECONDS);
          assertThat(envelope).as("a report within 60 s").isNotNull();
          return ReportJson.read(envelope.getReportJson());
        }
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  /** A copy of the kernel-shaped fake sysfs tree from test resources. */
  private Path fakeSysfs() throws Exception {
    Path source = Path.of(getClass().getResource("/sysfs/class/infiniband").toURI());
    Path target = dir.resolve("sys/class/infiniband");
    try (Stream<Path> files = Files.walk(source)) {
      for (Path p : files.toList()) {
        Path to = target.resolve(source.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(to);
        } else {
          Files.copy(p, to);
        }
      }
    }
    return target;
  }

  private static void bump(Path sysfs, String counter, long by) throws Exception {
    Path file = sysfs.resolve("mlx5_0/ports/1/counters/" + counter);
    long value = Long.parseLong(Files.readString(file).trim());
    Files.writeString(file, Long.toString(value + by) + "\n");
  }
}
