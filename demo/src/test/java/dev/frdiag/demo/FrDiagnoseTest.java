package dev.frdiag.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.cli.ExitCode;
import dev.frdiag.cli.FrDiagnose;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.demo.FrDemo;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Path;
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
