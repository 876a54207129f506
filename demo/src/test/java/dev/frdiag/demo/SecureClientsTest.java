package dev.frdiag.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.cli.ExitCode;
import dev.frdiag.cli.FrDiagnose;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.access.Security;
import dev.frdiag.testing.tls.TestCertificates;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The clients against a daemon that wants TLS and tokens: simulated ranks (the rank reporter) write with a writer
 * token, fr-diagnose reads with a reader's and is refused with a writer's.
 */
class SecureClientsTest {
  @TempDir
  Path dir;

  @Test
  void ranksAndFrDiagnoseWorkOverTlsWithTheirTokens() throws Exception {
    TestCertificates ca = TestCertificates.authority(dir, "frdiag");
    Path[] server = ca.server("daemon");
    Path writerToken = Files.writeString(dir.resolve("writer.token"), "writer-secret\n");
    Path readerToken = Files.writeString(dir.resolve("reader.token"), "reader-secret\n");
    Path access = Files.writeString(dir.resolve("access.json"), """
        {"principals": [
          {"name": "ranks", "token_sha256": "%s", "writer": ["secure"]},
          {"name": "oncall", "token_sha256": "%s", "reader": ["*"], "operator": ["*"]}]}
        """.formatted(AccessRules.sha256("writer-secret"), AccessRules.sha256("reader-secret")));
    DaemonSettings settings = DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dir.resolve("data"))
        .stallTimeout(Duration.ofSeconds(1)).heartbeatInterval(Duration.ofMillis(500))
        .security(new Security(server[0], server[1], null, access, false)).build();
    try (Daemon daemon = new Daemon(settings).start()) {
      String address = "127.0.0.1:" + daemon.port();
      FrSim sim = new FrSim();
      StringWriter simErr = new StringWriter();
      CompletableFuture<Integer> ranks = CompletableFuture.supplyAsync(() -> FrSim.run(sim, new String[] {
          "--daemon", address, "--tls-ca", ca.caCertificate().toString(), "--token-file", writerToken.toString(),
          "--job", "secure", "--ranks", "8", "--ranks-per-host", "4", "--fault", "gpu-stall", "--rank", "2",
          "--at-step", "3", "--duration", "2m"}, new PrintWriter(simErr, true)));
      try {
        StringWriter out = new StringWriter();
        await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
          StringWriter err = new StringWriter();
          out.getBuffer().setLength(0);
          int code = FrDiagnose.run(new String[] {"--daemon", address, "--tls-ca", ca.caCertificate().toString(),
              "--token-file", readerToken.toString(), "reports", "secure"}, new PrintWriter(out, true),
              new PrintWriter(err, true));
          assertThat(code).as("%s / ranks: %s", err, simErr).isZero();
          assertThat(out.toString()).contains("secure-000001");
        });
        StringWriter err = new StringWriter();
        int refused = FrDiagnose.run(new String[] {"--daemon", address, "--tls-ca", ca.caCertificate().toString(),
            "--token-file", writerToken.toString(), "reports", "secure"}, new PrintWriter(new StringWriter(), true),
            new PrintWriter(err, true));
        assertThat(refused).isNotZero();
        assertThat(err.toString()).contains("PERMISSION_DENIED").contains("ranks may not read job 'secure'");
      } finally {
        sim.requestStop();
        assertThat(ranks.get(30, TimeUnit.SECONDS)).isEqualTo(ExitCode.NO_HANG);
      }
    }
  }

  @Test
  void frDiagnoseInPlaintextAgainstATlsDaemonIsToldTheDaemonSpeaksTls() throws Exception {
    TestCertificates ca = TestCertificates.authority(dir, "frdiag");
    Path[] server = ca.server("daemon");
    DaemonSettings settings = DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dir.resolve("data"))
        .security(new Security(server[0], server[1], null, null, false)).build();
    try (Daemon daemon = new Daemon(settings).start()) {
      String address = "127.0.0.1:" + daemon.port();
      StringWriter err = new StringWriter();
      long start = System.nanoTime();
      int code = FrDiagnose.run(new String[] {"--daemon", address, "jobs"}, new PrintWriter(new StringWriter(), true),
          new PrintWriter(err, true));
      assertThat(code).isEqualTo(ExitCode.UNREACHABLE_OR_UNKNOWN);
      assertThat(err.toString()).isEqualTo("fr-diagnose: UNAVAILABLE: the daemon at " + address + " speaks TLS: give "
          + "--tls-ca PEM (the CA that signed its certificate), and --token-file or --tls-cert/--tls-key if it asks "
          + "who you are" + System.lineSeparator());
      assertThat(Duration.ofNanos(System.nanoTime() - start)).as("said at once, not after --timeout")
          .isLessThan(Duration.ofSeconds(20));
    }
  }
}
