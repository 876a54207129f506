package dev.frdiag.daemon;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code fr-daemon} as an operator starts it: a config file under the flags, and JSON logs. */
class DaemonMainTest {
  @TempDir
  Path dir;

  private Process start(String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
        .toString(), "-Xmx128m", "-cp", System.getProperty("java.class.path"), DaemonMain.class.getName()));
    command.addAll(List.of(args));
    return new ProcessBuilder(command).redirectErrorStream(true).start();
  }

  private static String finish(Process p) throws Exception {
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return out;
  }

  @Test
  void aConfigFileWithAnUnknownKeyOrABadValueIsAUsageErrorNamingIt() throws Exception {
    Path conf = dir.resolve("daemon.conf");
    Files.writeString(conf, "port=0\nstall-timout=30s\n");
    Process p = start("--config", conf.toString());
    String out = finish(p);
    assertThat(p.exitValue()).isEqualTo(2);
    assertThat(out).contains("fr-daemon: config file " + conf + ": unknown key 'stall-timout'; known keys: ");

    Files.writeString(conf, "port=0\nstall-timeout=soon\n");
    p = start("--config", conf.toString());
    out = finish(p);
    assertThat(p.exitValue()).isEqualTo(2);
    assertThat(out).contains("(stall-timeout= in " + conf + ")");
  }

  @Test
  void theFileSetsOptionsTheCommandLineOverridesAndJsonLogsAreOneObjectPerLine() throws Exception {
    Path conf = dir.resolve("daemon.conf");
    // bind from the file would be refused (plaintext beyond loopback): the command line's wins.
    Files.writeString(conf, "bind=0.0.0.0\nport=0\nmetrics-port=-1\nweb-port=-1\nlog-format=json\ndata-dir="
        + dir.resolve("data") + "\n");
    Process p = start("--config", conf.toString(), "--bind", "127.0.0.1", "--log-format", "json");
    try {
      BufferedReader lines = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      java.util.concurrent.BlockingQueue<String> queue = new java.util.concurrent.LinkedBlockingQueue<>();
      Thread reader = new Thread(() -> lines.lines().forEach(queue::add), "daemon-output");
      reader.setDaemon(true);
      reader.start();
      JsonNode listening = null;
      List<String> seen = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (listening == null && System.nanoTime() < deadline) {
        String line = queue.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
        if (line == null) {
          break;
        }
        seen.add(line);
        if (line.startsWith("{")) {
          JsonNode event = new ObjectMapper().readTree(line);
          if (event.path("formattedMessage").asText().startsWith("frdiag daemon listening on 127.0.0.1:")) {
            listening = event;
          }
        }
      }
      assertThat(listening).as("a JSON log line saying where it listens, among %s", seen).isNotNull();
      assertThat(listening.get("level").asText()).isEqualTo("INFO");
      assertThat(listening.get("formattedMessage").asText()).contains("data-dir=" + dir.resolve("data"));
    } finally {
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }
}
