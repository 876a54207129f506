package dev.frdiag.testing.sim;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.reporter.Reporter;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.proto.v1.RankIdentity;
import io.grpc.Channel;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The simulated ranks' streams to the daemon: one {@link Reporter} per rank on a small shared executor. A rank
 * whose process dies has its reporter killed (its stream breaks without a Goodbye), as a real dead rank's would.
 * Thread-safe.
 */
final class SimulatedReporters implements AutoCloseable {
  // The simulator's logger, so these lines keep the name they were always logged under.
  private static final Logger log = LoggerFactory.getLogger(RankSimulator.class);

  private final Reporter[] reporters;
  private final ScheduledExecutorService executor;
  private final Object lock = new Object();
  @GuardedBy("lock")
  private final boolean[] killed;

  /**
   * Starts every rank's reporter; they connect in the background.
   *
   * @param channels each rank's channel to the daemon (or its node relay)
   * @param clock wall clock in epoch nanoseconds, read on reporter threads
   */
  SimulatedReporters(FlightRecorder[] recorders, RankIdentity[] identities, IntFunction<Channel> channels,
      ReporterSettings settings, LongSupplier clock) {
    executor = Executors.newScheduledThreadPool(RankSimulator.REPORTER_THREADS,
        new ThreadFactoryBuilder().setNameFormat("frdiag-sim-reporter-%d").setDaemon(true).build());
    reporters = new Reporter[recorders.length];
    killed = new boolean[recorders.length];
    try {
      for (int r = 0; r < recorders.length; r++) {
        reporters[r] = Reporter.builder(recorders[r], identities[r], channels.apply(r)).executor(executor)
            .settings(settings).clock(clock).start();
      }
    } catch (RuntimeException e) {
      closeReporters();
      executor.shutdownNow();
      throw e;
    }
  }

  Reporter reporter(int rank) {
    return reporters[rank];
  }

  /**
   * Waits until the daemon has welcomed every rank's reporter.
   *
   * @return false when the timeout passed first
   */
  boolean awaitConnected(Duration timeout) throws InterruptedException {
    CompletableFuture<?>[] welcomes = new CompletableFuture<?>[reporters.length];
    for (int r = 0; r < reporters.length; r++) {
      welcomes[r] = reporters[r].firstConnect();
    }
    try {
      CompletableFuture.allOf(welcomes).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (TimeoutException e) {
      return false;
    } catch (ExecutionException e) {
      throw new IllegalStateException("a reporter failed before connecting", e.getCause());
    }
  }

  /** Breaks the stream of a rank whose process died; {@link #close} leaves it alone. */
  void kill(int rank) {
    synchronized (lock) {
      killed[rank] = true;
    }
    try {
      reporters[rank].kill();
    } catch (RuntimeException e) {
      log.warn("rank {}: killing its reporter failed: {}", rank, e.toString());
    }
  }

  /** Closes every reporter not killed (they flush and say Goodbye), then the shared executor. */
  @Override
  public void close() {
    closeReporters();
    executor.shutdown();
    try {
      if (!executor.awaitTermination(1, TimeUnit.SECONDS)) {
        executor.shutdownNow();
      }
    } catch (InterruptedException e) {
      executor.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  private void closeReporters() {
    for (int r = 0; r < reporters.length; r++) {
      boolean dead;
      synchronized (lock) {
        dead = killed[r];
      }
      if (reporters[r] == null || dead) {
        continue;
      }
      try {
        reporters[r].close();
      } catch (RuntimeException e) {
        log.warn("rank {}: closing its reporter failed: {}", r, e.toString());
      }
    }
  }
}
