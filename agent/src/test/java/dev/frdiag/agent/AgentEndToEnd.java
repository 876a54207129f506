package dev.frdiag.agent;

import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.daemon.Daemon;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the agent's end-to-end tests start, stopped after each test: the rank processes first, then agents and
 * channels in reverse order, then the daemon on 127.0.0.1.
 */
abstract class AgentEndToEnd {
  @TempDir
  Path dir;

  final List<ChildProcess> processes = new ArrayList<>();
  final List<AutoCloseable> resources = new ArrayList<>();
  Daemon daemon;

  /** Streams that batch, connect and retry within a test's patience. */
  static ReporterSettings quickStreams() {
    return ReporterSettings.builder().maxBatchDelay(Duration.ofMillis(50)).helloTimeout(Duration.ofSeconds(2))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(500)).build();
  }

  @AfterEach
  void tearDown() throws Exception {
    for (ChildProcess p : processes) {
      p.close();
    }
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
    if (daemon != null) {
      daemon.close();
    }
  }
}
