package dev.frdiag.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.cli.ExitCode;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.testing.incidents.IncidentWatch;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code fr-sim} against a daemon in its own right: the ranks it runs are what the daemon diagnoses. */
class FrSimTest {
  @TempDir
  Path dataDir;

  @Test
  void simulatedRanksAgainstARunningDaemonGetTheirInjectedFaultDiagnosed() throws Exception {
    String said = diagnosedAsCpuStallOfRank3("three-terminals");
    assertThat(said).contains("as job three-terminals\n");
  }

  @Test
  void ranksFannedInThroughOneRelayPerHostGetTheSameDiagnosis() throws Exception {
    String said = diagnosedAsCpuStallOfRank3("fanned-in", "--fan-in");
    assertThat(said).contains("as job fanned-in, one node stream per host");
  }

  /** Runs fr-sim with a CPU stall on rank 3 against a daemon until it reports; returns what fr-sim said. */
  private String diagnosedAsCpuStallOfRank3(String job, String... extra) throws Exception {
    DaemonSettings settings = DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .stallTimeout(Duration.ofSeconds(1)).heartbeatInterval(Duration.ofMillis(500)).build();
    try (Daemon daemon = new Daemon(settings).start()) {
      ManagedChannel watcher = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
      try {
        BlockingQueue<ReportEnvelope> reports = IncidentWatch.of(watcher, job);
        FrSim sim = new FrSim();
        StringWriter err = new StringWriter();
        List<String> args = new ArrayList<>(List.of("--daemon", "127.0.0.1:" + daemon.port(), "--job", job,
            "--ranks", "8", "--ranks-per-host", "4", "--fault", "cpu-stall", "--rank", "3", "--at-step", "3",
            "--duration", "2m", "--step-interval", "30ms"));
        args.addAll(List.of(extra));
        CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() -> FrSim.run(sim,
            args.toArray(String[]::new), new PrintWriter(err, true)));

        ReportEnvelope report = reports.poll(60, TimeUnit.SECONDS);
        assertThat(report).as("a report for the simulated job; fr-sim said: %s", err).isNotNull();
        assertThat(report.getSummary().getVerdict()).isEqualTo(Verdict.HANG);
        assertThat(report.getSummary().getSymptom()).isEqualTo(Symptom.CPU_STALL);
        assertThat(report.getSummary().getCulpritRanksList()).containsExactly(3);

        sim.requestStop();
        assertThat(exit.get(30, TimeUnit.SECONDS)).as(err.toString()).isEqualTo(ExitCode.NO_HANG);
        assertThat(err.toString()).contains("reporting to 127.0.0.1:" + daemon.port() + " as job " + job)
            .contains("injecting cpu-stall on rank 3 at step 3");
        return err.toString();
      } finally {
        watcher.shutdownNow();
      }
    }
  }

  @Test
  void aDaemonThatIsNotThereIsReportedAsUnreachable() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    StringWriter err = new StringWriter();
    int code = FrSim.run(new FrSim(), new String[] {"--daemon", "127.0.0.1:" + closedPort, "--ranks", "4",
        "--ranks-per-host", "4", "--rank", "1", "--connect-timeout", "2s"}, new PrintWriter(err, true));
    assertThat(code).as(err.toString()).isEqualTo(ExitCode.UNREACHABLE_OR_UNKNOWN);
    assertThat(err.toString()).contains("not every rank could connect to the daemon at 127.0.0.1:" + closedPort);
  }

  @Test
  void aStepIntervalThatIsNotAboveZeroIsAUsageError() {
    StringWriter err = new StringWriter();
    int code = FrSim.run(new FrSim(), new String[] {"--ranks", "4", "--rank", "1", "--step-interval", "-1s"},
        new PrintWriter(err, true));
    assertThat(code).as(err.toString()).isEqualTo(ExitCode.USAGE);
    assertThat(err.toString()).contains("--step-interval").contains("'-1s' is not above zero");
  }

  @Test
  void theDemoRefusesToRunWithoutAFaultAndPointsToTheSimulator() {
    StringWriter err = new StringWriter();
    int code = FrDemo.run(new String[] {"--fault", "none"}, new PrintWriter(new StringWriter()),
        new PrintWriter(err, true));
    assertThat(code).isEqualTo(ExitCode.USAGE);
    assertThat(err.toString()).contains("fr-sim --fault none");
  }
}
