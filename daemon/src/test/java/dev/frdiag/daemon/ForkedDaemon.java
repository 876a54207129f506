package dev.frdiag.daemon;

import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code fr-daemon} in a JVM of its own on loopback, as an operator runs it: a heap of its own to exhaust, and a
 * process to kill by its pid. Its output is kept for the test to read.
 */
public final class ForkedDaemon implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("fr-daemon listening on 127\\.0\\.0\\.1:(\\d+)"
      + "(?:, reports in [^,]*)?(?:, metrics on 127\\.0\\.0\\.1:(\\d+)/metrics)?");

  private final Process process;
  private final int port;
  private final int metricsPort;
  private final StringBuffer output;

  private ForkedDaemon(Process process, int port, int metricsPort, StringBuffer output) {
    this.process = process;
    this.port = port;
    this.metricsPort = metricsPort;
    this.output = output;
  }

  /**
   * Starts {@code fr-daemon --bind 127.0.0.1 --data-dir dataDir args...} with heap {@code heap} (e.g. "512m") and
   * returns once it listens.
   */
  public static ForkedDaemon start(String heap, Path dataDir, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
        .toString(), "-Xms" + heap, "-Xmx" + heap, "-cp", System.getProperty("java.class.path"),
        DaemonMain.class.getName(), "--bind", "127.0.0.1", "--data-dir", dataDir.toString()));
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    StringBuffer seen = new StringBuffer();
    String line;
    while ((line = out.readLine()) != null) {
      seen.append(line).append('\n');
      Matcher m = LISTENING.matcher(line);
      if (m.find()) {
        // Keep draining its output so it never blocks on a full pipe, and keep it for the test.
        Thread drain = new Thread(() -> {
          try {
            String more;
            while ((more = out.readLine()) != null) {
              seen.append(more).append('\n');
            }
          } catch (IOException ignored) {
            // The process was killed.
          }
        }, "forked-daemon-output");
        drain.setDaemon(true);
        drain.start();
        return new ForkedDaemon(p, Integer.parseInt(m.group(1)), m.group(2) == null ? -1
            : Integer.parseInt(m.group(2)), seen);
      }
    }
    p.destroyForcibly();
    throw new AssertionError("the daemon did not start:\n" + seen);
  }

  public int port() {
    return port;
  }

  /** The Prometheus port; -1 when not served. */
  public int metricsPort() {
    return metricsPort;
  }

  public long pid() {
    return process.pid();
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /** Whether it exits by itself within {@code time}; waits that long while it runs. */
  public boolean exitsWithin(java.time.Duration time) throws InterruptedException {
    return process.waitFor(time.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Everything it wrote so far. */
  public String output() {
    return output.toString();
  }

  /** A plaintext channel to its gRPC port. */
  public ManagedChannel channel() {
    return NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
  }

  /** SIGKILL to its pid, as a crash or the OOM killer would; returns once it is gone. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      throw new AssertionError("daemon pid " + process.pid() + " survived SIGKILL for 10 s");
    }
  }

  /** SIGTERM to its pid, then SIGKILL if it has not stopped within 10 s. */
  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      kill();
    }
  }
}
