package dev.frdiag.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.cli.ExitCode;
import dev.frdiag.cli.FrDiagnose;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code fr-diagnose watch} waits for a daemon that is not there yet, then prints the report of the hang it finds. */
class WatchTest {
  @TempDir
  Path dataDir;

  @Test
  void watchReconnectsAndPrintsOneLinePerReport() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CompletableFuture<Integer> watch = CompletableFuture.supplyAsync(() -> FrDiagnose.run(new String[] {
        "--daemon", "127.0.0.1:" + port, "watch", "watched", "--count", "1"}, new PrintWriter(out, true),
        new PrintWriter(err, true)));
    await().atMost(Duration.ofSeconds(20)).until(() -> err.toString().contains("went away (UNAVAILABLE)"));

    DaemonSettings settings = DaemonSettings.builder().bindAddress("127.0.0.1").port(port).dataDir(dataDir)
        .stallTimeout(Duration.ofSeconds(1)).heartbeatInterval(Duration.ofMillis(500)).build();
    try (Daemon daemon = new Daemon(settings).start()) {
      await().atMost(Duration.ofSeconds(60)).until(() -> err.toString().contains("watching job watched"));
      FrSim sim = new FrSim();
      CompletableFuture<Integer> ranks = CompletableFuture.supplyAsync(() -> FrSim.run(sim, new String[] {
          "--daemon", "127.0.0.1:" + port, "--job", "watched", "--ranks", "8", "--ranks-per-host", "4",
          "--fault", "dead-rank", "--rank", "6", "--at-step", "3", "--duration", "2m"},
          new PrintWriter(new StringWriter(), true)));
      try {
        assertThat(watch.get(60, TimeUnit.SECONDS)).as(err.toString()).isEqualTo(ExitCode.NO_HANG);
      } finally {
        sim.requestStop();
        ranks.get(30, TimeUnit.SECONDS);
      }
    }
    assertThat(out.toString()).startsWith("watched-000001  ").contains("  watched  HANG DEAD_RANK  culprits [6]  ")
        .hasLineCount(1);
  }
}
