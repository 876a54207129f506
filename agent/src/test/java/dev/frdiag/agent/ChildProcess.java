package dev.frdiag.agent;

import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A JVM started from the test's own class path, its output lines collected for assertions and failure
 * messages. {@link #close} kills it.
 */
final class ChildProcess implements AutoCloseable {
  private final String name;
  private final Process process;
  private final Writer stdin;
  private final List<String> lines = new CopyOnWriteArrayList<>();

  private ChildProcess(String name, Process process) {
    this.name = name;
    this.process = process;
    this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    collect(process.getInputStream(), "");
    collect(process.getErrorStream(), "stderr: ");
  }

  /** Starts {@code java -cp <this class path> mainClass args…}. */
  static ChildProcess java(String name, Class<?> mainClass, List<String> args) throws IOException {
    return java(name, mainClass.getName(), args);
  }

  static ChildProcess java(String name, String mainClass, List<String> args) throws IOException {
    return java(name, mainClass, args, Map.of());
  }

  /** Starts {@code java -cp <this class path> mainClass args…} with {@code env} added to this JVM's environment. */
  static ChildProcess java(String name, String mainClass, List<String> args, Map<String, String> env)
      throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    // Small and quick to start: these processes only read files and talk over loopback.
    command.add("-Xmx64m");
    command.add("-XX:TieredStopAtLevel=1");
    command.add("-Xshare:auto");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(mainClass);
    command.addAll(args);
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().putAll(env);
    return new ChildProcess(name, builder.start());
  }

  private void collect(InputStream in, String tag) {
    Thread t = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          lines.add(tag + line);
        }
      } catch (IOException e) {
        // The process is gone.
      }
    }, name + "-output");
    t.setDaemon(true);
    t.start();
  }

  /** Sends one line to its stdin. */
  void command(String line) throws IOException {
    stdin.write(line + "\n");
    stdin.flush();
  }

  /** Waits until it printed {@code line}. */
  void awaitLine(String line, Duration atMost) {
    await(name + " printing '" + line + "'").atMost(atMost).until(() -> {
      if (lines.contains(line)) {
        return true;
      }
      if (!process.isAlive()) {
        throw new AssertionError(name + " exited with " + process.exitValue() + " before printing '" + line
            + "': " + lines);
      }
      return false;
    });
  }

  /** How many times it printed {@code line}. */
  long count(String line) {
    return lines.stream().filter(line::equals).count();
  }

  List<String> output() {
    return List.copyOf(lines);
  }

  Process process() {
    return process;
  }

  String name() {
    return name;
  }

  @Override
  public void close() {
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return name + " " + lines;
  }
}
