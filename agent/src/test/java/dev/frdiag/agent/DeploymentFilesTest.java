package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.frdiag.daemon.DaemonMain;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The deployment recipes in {@code deploy/} (systemd, Kubernetes, Slurm) only use options that fr-daemon and
 * fr-agent have, and the systemd units pass {@code systemd-analyze verify}.
 */
class DeploymentFilesTest {
  private static final Path DEPLOY = Path.of("..", "deploy");
  private static final Pattern FLAG = Pattern.compile("(?<![\\w-])--([a-z][a-z0-9-]*)");
  private static final Pattern CONF_KEY = Pattern.compile("^\\s*([a-z][a-z0-9-]*)=", Pattern.MULTILINE);

  private static Set<String> options(Object command) {
    Set<String> names = new TreeSet<>();
    new CommandLine(command).getCommandSpec().options().forEach(o -> names.add(o.longestName().substring(2)));
    return names;
  }

  /** The {@code --flags} given to {@code command} on each line that runs it (continuations joined). */
  private static List<String> flagsOf(String text, String command) {
    String joined = text.replaceAll("\\\\\\n", " ").replaceAll("\\[\\s*\\n\\s*", "[").replaceAll(",\\s*\\n\\s*", ", ");
    List<String> flags = new ArrayList<>();
    for (String line : joined.split("\n")) {
      int at = line.indexOf("bin/" + command);
      if (at < 0) {
        continue;
      }
      String rest = line.substring(at);
      int end = rest.indexOf(']');
      Matcher m = FLAG.matcher(end < 0 ? rest : rest.substring(0, end));
      while (m.find()) {
        flags.add(m.group(1));
      }
    }
    return flags;
  }

  private static List<String> confKeys(String text) {
    List<String> keys = new ArrayList<>();
    Matcher m = CONF_KEY.matcher(text);
    while (m.find()) {
      keys.add(m.group(1));
    }
    return keys;
  }

  @Test
  void everyOptionTheRecipesPassExists() throws IOException {
    Set<String> daemon = options(new DaemonMain());
    Set<String> agent = options(new AgentMain());
    List<String> checked = new ArrayList<>();
    try (Stream<Path> files = Files.walk(DEPLOY)) {
      for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
        String text = Files.readString(f, StandardCharsets.UTF_8);
        String name = f.getFileName().toString();
        for (String flag : flagsOf(text, "fr-daemon")) {
          assertThat(daemon).as("fr-daemon --%s in %s", flag, f).contains(flag);
          checked.add(name + ": fr-daemon --" + flag);
        }
        for (String flag : flagsOf(text, "fr-agent")) {
          assertThat(agent).as("fr-agent --%s in %s", flag, f).contains(flag);
          checked.add(name + ": fr-agent --" + flag);
        }
        if (name.equals("daemon.conf") || name.equals("daemon.yaml")) {
          for (String key : confKeys(text)) {
            assertThat(daemon).as("key %s= in %s", key, f).contains(key);
            checked.add(name + ": " + key + "=");
          }
        }
        if (name.equals("agent.conf")) {
          for (String key : confKeys(text)) {
            assertThat(agent).as("key %s= in %s", key, f).contains(key);
            checked.add(name + ": " + key + "=");
          }
        }
      }
    }
    assertThat(checked).as("the recipes were found and read").anyMatch(c -> c.startsWith("fr-daemon.service"))
        .anyMatch(c -> c.startsWith("fr-agent@.service")).anyMatch(c -> c.startsWith("fr-agent-in-job.sh"))
        .anyMatch(c -> c.startsWith("training-pod-with-agent.yaml")).anyMatch(c -> c.startsWith("daemon.yaml"))
        .anyMatch(c -> c.startsWith("daemon.conf")).anyMatch(c -> c.startsWith("agent.conf"));
  }

  @Test
  void theSystemdUnitsVerify(@TempDir Path dir) throws Exception {
    Path analyze = Path.of("/usr/bin/systemd-analyze");
    assumeTrue(Files.isExecutable(analyze), "systemd-analyze is not installed here");
    // verify checks that ExecStart exists: point it at this checkout's launchers instead of /opt/frdiag.
    Path bin = Path.of("..", "bin").toAbsolutePath().normalize();
    List<String> command = new ArrayList<>(List.of(analyze.toString(), "verify"));
    for (String unit : List.of("fr-daemon.service", "fr-agent@.service")) {
      Path copy = dir.resolve(unit);
      Files.writeString(copy, Files.readString(DEPLOY.resolve("systemd").resolve(unit))
          .replace("/opt/frdiag/bin/", bin + "/"));
      command.add(copy.toString());
    }
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out).as("systemd-analyze verify findings").isBlank();
  }
}
