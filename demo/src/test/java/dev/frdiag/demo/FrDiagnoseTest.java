package dev.frdiag.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.cli.ExitCode;
import dev.frdiag.cli.FrDiagnose;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.demo.FrDemo;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FrDiagnoseTest {
  @TempDir
  Path dataDir;

  private record Result(int code, String out, String err) {}

  private static Result diagnose(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDiagnose.run(args, new PrintWriter(out), new PrintWriter(err));
    return new Result(code, out.toString(), err.toString());
  }

  @Test
  void printsTheStoredDiagnosisOfAJob() {
    // The demo leaves its report in the data dir; a daemon started on it serves the report.
    int demo = FrDemo.run(new String[] {"--fault", "cpu-stall", "--rank", "2", "--at-step", "3",
        "--stall-timeout", "1s", "--data-dir", dataDir.toString()}, new PrintWriter(new StringWriter()),
        new PrintWriter(new StringWriter()));
    assertThat(demo).isZero();
    try (Daemon daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .build()).start()) {
      String address = "127.0.0.1:" + daemon.port();
      Result text = diagnose("--daemon", address, "demo");
      assertThat(text.code()).as(text.err()).isEqualTo(ExitCode.HANG);
      assertThat(text.out()).startsWith("Rank 2 (node00) never issued ");
      assertThat(text.out()).contains("CPU-side stall.", "HANG · CPU_STALL", "culprit ranks  [2]",
          "Recommended action:");

      Result json = diagnose("--daemon", address, "--json", "demo");
      assertThat(json.out()).contains("\"schema\" : \"frdiag.report/v1\"", "\"symptom\" : \"CPU_STALL\"");

      Result reports = diagnose("--daemon", address, "reports", "demo");
      assertThat(reports.out()).startsWith("demo-000001 ");

      Result one = diagnose("--daemon", address, "report", "demo-000001");
      assertThat(one.out()).isEqualTo(text.out());

      Result missing = diagnose("--daemon", address, "report", "demo-000099");
      assertThat(missing.code()).isEqualTo(ExitCode.UNREACHABLE_OR_UNKNOWN);
      assertThat(missing.err()).isEqualTo("fr-diagnose: NOT_FOUND: no report 'demo-000099'\n");
    }
  }

  @Test
  void unknownJobIsExitCodeThreeWithOneLine() {
    try (Daemon daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .build()).start()) {
      Result r = diagnose("--daemon", "127.0.0.1:" + daemon.port(), "nosuchjob");
      assertThat(r.code()).isEqualTo(ExitCode.UNREACHABLE_OR_UNKNOWN);
      assertThat(r.err()).isEqualTo("fr-diagnose: NOT_FOUND: unknown job 'nosuchjob'\n");
    }
  }

  @Test
  void diagnoseNowSaysAtOnceThatTheDaemonsDiskRefusedTheReport() throws Exception {
    // A file stands where the job's report folder would go: writes there fail as on a full disk, root or not.
    Files.createDirectories(dataDir.resolve("reports"));
    Files.writeString(dataDir.resolve("reports").resolve("full"), "not a folder");
    try (Daemon daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .stallTimeout(Duration.ofMinutes(10)).build()).start()) {
      String address = "127.0.0.1:" + daemon.port();
      FrSim sim = new FrSim();
      StringWriter simErr = new StringWriter();
      CompletableFuture<Integer> ranks = CompletableFuture.supplyAsync(() -> FrSim.run(sim, new String[] {
          "--daemon", address, "--job", "full", "--ranks", "8", "--ranks-per-host", "4", "--fault", "none",
          "--duration", "2m"}, new PrintWriter(simErr, true)));
      try {
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(daemon.registry().find("full")
            .map(j -> j.summary().getRanksConnected()).orElse(0)).as("ranks connected; fr-sim said: %s", simErr)
            .isEqualTo(8));
        long start = System.nanoTime();
        Result r = diagnose("--daemon", address, "--now", "full");
        assertThat(r.code()).as(r.err()).isEqualTo(ExitCode.FAILURE);
        assertThat(r.err()).matches("fr-diagnose: RESOURCE_EXHAUSTED: the daemon's data dir refuses writes \\(.+\\): "
            + "report full-000001 \\([A-Z_]+ [A-Z_]+\\) waits in memory and is written when the disk allows; free space "
            + "under the data dir\n");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("said at once, not after --timeout (30 s)")
            .isLessThan(Duration.ofSeconds(20));
      } finally {
        sim.requestStop();
        ranks.get(30, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void unreachableDaemonIsExitCodeThreeWithOneLine() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    Result r = diagnose("--daemon", "127.0.0.1:" + closedPort, "--timeout", "5", "job");
    assertThat(r.code()).isEqualTo(ExitCode.UNREACHABLE_OR_UNKNOWN);
    assertThat(r.err()).startsWith("fr-diagnose: UNAVAILABLE: cannot reach the daemon at 127.0.0.1:" + closedPort);
    assertThat(r.err().lines().count()).isEqualTo(1);
  }

  @Test
  void usageErrorsAreExitCodeTwo() {
    Result r = diagnose("--daemon", "nohostport:xyz", "job");
    assertThat(r.code()).isEqualTo(ExitCode.USAGE);
    assertThat(r.err()).contains("'nohostport:xyz' is not host:port");
  }
}
