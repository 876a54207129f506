package dev.frdiag.agent.probe;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.context.NodeLogs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the node's probes off the agent's thread, each bounded in time and output, and keeps the findings of the
 * last run for the node's context. A run is started when the daemon investigates (its findings then reach the
 * daemon in a second post) and at a low background rate, so an Xid logged minutes before the stall is already in
 * the first post. A probe that is not installed, fails or overruns gives nothing and delays nothing else.
 * Thread-safe.
 */
public final class NodeProbes implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(NodeProbes.class);
  /** Output read from one probe: a dmesg ring buffer is a few MB at most; the rest is dropped. */
  static final int MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

  private final List<NodeProbe> probes;
  private final Duration timeout;
  private final LongSupplier nanoTime;
  private final ExecutorService runner;
  private final AtomicBoolean running = new AtomicBoolean();
  private volatile List<ContextFinding> latest = List.of();
  private volatile long lastRunNanos;
  private volatile boolean ran;

  /**
   * @param probes what to run
   * @param timeout how long one probe may run before it is killed
   */
  public NodeProbes(List<NodeProbe> probes, Duration timeout) {
    this(probes, timeout, System::nanoTime);
  }

  NodeProbes(List<NodeProbe> probes, Duration timeout, LongSupplier nanoTime) {
    this.probes = List.copyOf(probes);
    this.timeout = Objects.requireNonNull(timeout, "timeout");
    this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
    this.runner = Executors.newSingleThreadExecutor(
        new ThreadFactoryBuilder().setNameFormat("frdiag-agent-probes").setDaemon(true).build());
  }

  /** The findings of the last finished run, empty before the first; hosts left empty for the caller to fill. */
  public List<ContextFinding> latest() {
    return latest;
  }

  /**
   * Starts a run unless one is under way or the last finished less than {@code minAge} ago; {@code done} is told
   * on the probe thread when a started run has finished.
   */
  public void refresh(Duration minAge, Runnable done) {
    if (probes.isEmpty() || ran && nanoTime.getAsLong() - lastRunNanos < minAge.toNanos()
        || !running.compareAndSet(false, true)) {
      return;
    }
    try {
      runner.execute(() -> {
        try {
          latest = runAll();
          lastRunNanos = nanoTime.getAsLong();
          ran = true;
        } finally {
          running.set(false);
        }
        done.run();
      });
    } catch (RejectedExecutionException e) {
      running.set(false);
    }
  }

  /** Runs every probe now, on the caller's thread, and returns their findings. */
  List<ContextFinding> runAll() {
    List<ContextFinding> out = new ArrayList<>();
    for (NodeProbe p : probes) {
      String text = run(p);
      if (text == null || text.isEmpty()) {
        continue;
      }
      try {
        for (NodeContext n : NodeLogs.read("", new BufferedReader(new StringReader(text)), p.name())) {
          out.addAll(n.getFindingsList());
        }
      } catch (IOException e) {
        // Reading a string does not fail.
        throw new IllegalStateException(e);
      }
    }
    return List.copyOf(out);
  }

  /** What {@code p} printed, or null when it could not run, failed or overran (said once at debug level). */
  private String run(NodeProbe p) {
    Process process;
    try {
      process = new ProcessBuilder(p.command()).redirectErrorStream(false)
          .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    } catch (IOException e) {
      log.debug("probe {} not run: {}", p.name(), e.getMessage());
      return null;
    }
    // A reader of its own: a probe whose child keeps the output open after the probe is killed would otherwise
    // block the next probe's read.
    ExecutorService reader = Executors.newSingleThreadExecutor(
        new ThreadFactoryBuilder().setNameFormat("frdiag-agent-probe-output").setDaemon(true).build());
    try (InputStream in = process.getInputStream()) {
      process.getOutputStream().close();
      Future<byte[]> output = reader.submit(() -> readBounded(in));
      byte[] bytes = output.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
      if (!process.waitFor(Math.max(1, timeout.toMillis() / 10), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
      }
      return new String(bytes, StandardCharsets.UTF_8);
    } catch (TimeoutException e) {
      log.warn("probe {} ran longer than {} ms and was stopped", p.name(), timeout.toMillis());
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    } catch (Exception e) {
      log.debug("probe {} failed: {}", p.name(), e.toString());
      return null;
    } finally {
      process.destroyForcibly();
      reader.shutdownNow();
    }
  }

  private static byte[] readBounded(InputStream in) throws IOException {
    byte[] bytes = in.readNBytes(MAX_OUTPUT_BYTES);
    // Drain the rest so the process is not blocked on a full pipe while it is waited for.
    in.transferTo(java.io.OutputStream.nullOutputStream());
    return bytes;
  }

  @Override
  public void close() {
    runner.shutdownNow();
  }
}
