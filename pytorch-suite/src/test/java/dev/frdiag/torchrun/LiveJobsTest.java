package dev.frdiag.torchrun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.frdiag.cli.FrDiagnose;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.analysis.Lateness;
import dev.frdiag.report.Report;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shipped fr-agent beside live torchrun jobs whose every rank serves torch's worker server, streaming to a
 * daemon on loopback with no {@code --now} and no dump asked by hand: a hang is reported by itself within the stall
 * timeout and a little more, naming the rank and, for a CPU stall, the line its Python stack is stuck on; a rank
 * slowed by tens of milliseconds a step is reported a straggler within a minute; a healthy job is never reported; a
 * killed rank names no innocent one.
 */
class LiveJobsTest {
  private static final Logger log = LoggerFactory.getLogger(LiveJobsTest.class);
  private static final Duration STALL_TIMEOUT = Duration.ofSeconds(10);
  /** What the issue allows past the stall timeout, from the fault to the report on disk. */
  private static final Duration REPORTED_WITHIN = STALL_TIMEOUT.plusSeconds(10);
  private static final Path AGENT = Path.of("..", "bin", "fr-agent").toAbsolutePath().normalize();

  @TempDir
  Path data;

  /** A daemon, a job and its agent, all ended by {@link #close}. */
  private final class Live implements AutoCloseable {
    final String job;
    final Daemon daemon;
    final TorchrunJob torchrun;
    final Path sockets;
    final Process agent;
    final ProcessTree agentTree;

    Live(String name, Map<String, String> settings) throws Exception {
      this.job = name;
      Path dir = ScenarioRuns.JOBS.resolve("live-" + name);
      Dirs.deleteRecursively(dir);
      Files.createDirectories(dir);
      daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(data.resolve(name))
          .stallTimeout(STALL_TIMEOUT).build()).start();
      // A unix socket's path holds at most 107 bytes: the sockets get a short folder of their own.
      sockets = Files.createTempDirectory("frdiag-ws");
      torchrun = TorchrunJob.start(TorchVenv.get(), dir, 4, settings, sockets.resolve("worker_").toString());
      agent = new ProcessBuilder(AGENT.toString(), "--job", name, "--daemon", "127.0.0.1:" + daemon.port(),
          "--world-size", "4", "--local-ranks", "0-3", "--worker-socket",
          sockets.resolve("worker_{rank}.sock").toString(), "--progress-interval", "1s", "--node-probes", "none")
          .redirectErrorStream(true).redirectOutput(dir.resolve("agent.log").toFile()).start();
      agentTree = new ProcessTree(agent);
    }

    Optional<Report> report() {
      return daemon.store().latest(job);
    }

    @Override
    public void close() throws Exception {
      try {
        agentTree.addDescendants(agent.toHandle());
        assertThat(agentTree.killAll()).as("fr-agent's processes still alive").isEmpty();
        torchrun.close();
      } finally {
        daemon.close();
        Dirs.deleteRecursively(sockets);
      }
    }
  }

  @Test
  void aCpuStallIsReportedByItselfNamingTheRankAndTheLineItIsStuckOn() throws Exception {
    try (Live live = new Live("live-stall", Map.of("FAULT_KIND", "stall", "FAULT_RANK", "2", "FAULT_GROUP", "dp",
        "HANG_SECS", "600"))) {
      Report r = await("a report").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(250))
          .until(live::report, Optional::isPresent).orElseThrow();

      assertThat(r.trigger()).isEqualTo(Report.Trigger.STALL);
      assertThat(r.verdict() + " " + r.symptom() + " " + r.culpritRanks()).isEqualTo("HANG CPU_STALL [2]");
      assertThat(r.culprits().get(0).stuckAt()).startsWith("sleep_forever (train.py:");
      assertThat(faultToReport(r)).isLessThanOrEqualTo(REPORTED_WITHIN);
    }
  }

  @Test
  void anOpMismatchIsReportedByItself() throws Exception {
    try (Live live = new Live("live-mismatch", Map.of("FAULT_KIND", "mismatch", "FAULT_RANK", "1",
        "FAULT_GROUP", "dp", "HANG_SECS", "600"))) {
      Report r = await("a report").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(250))
          .until(live::report, Optional::isPresent).orElseThrow();

      assertThat(r.verdict() + " " + r.symptom() + " " + r.culpritRanks()).isEqualTo("HANG MISMATCH [1]");
      assertThat(faultToReport(r)).isLessThanOrEqualTo(REPORTED_WITHIN);
    }
  }

  @Test
  void aHealthyJobRunsThreeMinutesWithNoReport() throws Exception {
    // 4,000 steps of 50 ms sleep and four collectives: over three minutes on two cores. No hang report, and no
    // straggler report from the 18 straggler analyses the daemon runs meanwhile (every 10 s).
    try (Live live = new Live("live-healthy", Map.of("STEPS", "4000", "HANG_SECS", "600"))) {
      long start = System.nanoTime();
      await("three minutes of training").atMost(Duration.ofMinutes(5)).pollInterval(Duration.ofSeconds(1))
          .failFast("torchrun ended before three minutes", () -> live.torchrun.exitCode() != null)
          .until(() -> {
            assertThat(live.report()).as("a report of a healthy job").isEmpty();
            return System.nanoTime() - start >= Duration.ofMinutes(3).toNanos();
          });
      log.info("real-PyTorch suite: live-healthy: no report in {} s of training",
          (System.nanoTime() - start) / 1_000_000_000L);
    }
  }

  @Test
  void aRankLateByTensOfMillisecondsEveryStepIsReportedSlowWithinAMinute() throws Exception {
    // Rank 2 sleeps 30 ms before its first collective of every step, from the first step on; the job never hangs.
    try (Live live = new Live("live-slow", Map.of("FAULT_KIND", "slow", "FAULT_RANK", "2", "FAULT_DELAY_MS", "30",
        "STEPS", "3000", "HANG_SECS", "600"))) {
      Report r = await("a straggler report").atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(250))
          .until(live::report, Optional::isPresent).orElseThrow();
      Instant reported = Instant.now();

      assertThat(r.trigger()).isEqualTo(Report.Trigger.STRAGGLER);
      assertThat(r.verdict() + " " + r.symptom() + " " + r.culpritRanks()).isEqualTo("SLOW STRAGGLER [2]");
      assertThat(r.headline()).endsWith("it issues them late (CPU side).");
      assertThat(r.lateness().ranks()).filteredOn(Lateness.Rank::culprit).extracting(Lateness.Rank::rank)
          .containsExactly(2);
      // From the job's first step (its log's "started" line, to the second) to the report in the store.
      Duration took = Duration.between(live.torchrun.started(), reported);
      log.info("real-PyTorch suite: live-slow: {} {} {} reported {} s after the job's first step: {}", r.verdict(),
          r.symptom(), r.culpritRanks(), took.toSeconds(), r.headline());
      assertThat(took).isLessThanOrEqualTo(Duration.ofSeconds(60));
    }
  }

  @Test
  void aKilledRankNamesNoInnocentRank() throws Exception {
    try (Live live = new Live("live-killed", Map.of("FAULT_KIND", "kill", "FAULT_RANK", "1", "FAULT_GROUP", "dp",
        "HANG_SECS", "600"))) {
      live.torchrun.awaitExit(Duration.ofMinutes(2));
      // torchrun ended the others at once. Asked now, as an operator would after the job died, the daemon may blame
      // rank 1 or no one; so may any report it wrote by itself meanwhile.
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      int code = FrDiagnose.run(new String[] {"--daemon", "127.0.0.1:" + live.daemon.port(), "--json", "--now",
          live.job}, new PrintWriter(out), new PrintWriter(err));
      JsonNode asked = new ObjectMapper().readTree(out.toString());
      List<Integer> blamed = new ArrayList<>();
      asked.path("culprit_ranks").forEach(r -> blamed.add(r.asInt()));
      log.info("real-PyTorch suite: live-killed, asked after the job ended: {} {} {} (exit {})",
          asked.path("verdict").asText(), asked.path("symptom").asText(), blamed, code);

      assertThat(blamed).as(err.toString()).isSubsetOf(List.of(1));
      live.daemon.store().list(live.job).forEach(r -> assertThat(r.culpritRanks()).isSubsetOf(List.of(1)));
    }
  }

  /** From the stuck op's first issue (the timeline's first divergence) to the report written, as the report says. */
  private static Duration faultToReport(Report r) {
    Duration d = Duration.between(r.timeline().get(0).at(), r.timeline().get(r.timeline().size() - 1).at());
    log.info("real-PyTorch suite: {}: {} {} {} reported {} ms after the first divergence", r.job(), r.verdict(),
        r.symptom(), r.culpritRanks(), d.toMillis());
    return d;
  }
}
