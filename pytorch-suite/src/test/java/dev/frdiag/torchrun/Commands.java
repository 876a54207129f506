package dev.frdiag.torchrun;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs a short command (pip, torchfrtrace, the launcher) with a deadline, ending it and its children by pid. */
final class Commands {
  private Commands() {}

  /** What a command did: its exit code, stdout and stderr. */
  record Result(int exitCode, String stdout, String stderr) {
    /** stdout, then stderr. */
    String output() {
      return stdout + stderr;
    }
  }

  /**
   * Runs {@code command} in {@code dir} with {@code env} added, its stdout going to {@code log} and its stderr to
   * {@code log} with {@code .stderr} appended.
   *
   * @throws IOException when it cannot start, or did not end within {@code deadline} (it is then killed)
   */
  static Result run(List<String> command, Path dir, Map<String, String> env, Path log, Duration deadline)
      throws IOException, InterruptedException {
    Files.createDirectories(log.toAbsolutePath().getParent());
    Path errors = log.resolveSibling(log.getFileName() + ".stderr");
    ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile())
        .redirectOutput(log.toFile()).redirectError(errors.toFile()).redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    builder.environment().putAll(env);
    Process process = builder.start();
    ProcessTree tree = new ProcessTree(process);
    try {
      if (!process.waitFor(deadline.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new IOException(String.join(" ", command) + " did not end within " + deadline.toSeconds()
            + " s; its output is in " + log);
      }
      return new Result(process.exitValue(), Files.readString(log, StandardCharsets.UTF_8),
          Files.readString(errors, StandardCharsets.UTF_8));
    } finally {
      tree.addDescendants(process.toHandle());
      List<Long> alive = tree.killAll();
      if (!alive.isEmpty()) {
        throw new IllegalStateException("processes of " + command.get(0) + " left running: " + alive);
      }
    }
  }
}
