package dev.frdiag.torchrun;

import dev.frdiag.agent.controlplane.UnixHttpClient;
import dev.frdiag.agent.controlplane.WorkerServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs each scenario's job once per JVM, on first use, and keeps what it left in {@code target/jobs/<scenario>}:
 * the tests of every class read the same dumps. One job at a time: with 2 cores, {@code import torch} in 4-8 ranks
 * is most of a job's time and would only slow a second job down.
 */
final class ScenarioRuns {
  static final Path JOBS = Path.of("target", "jobs").toAbsolutePath();
  /**
   * Start, {@code import torch} in every rank, the fault, the hang threshold and the first pickle: 12-20 s for 4
   * ranks alone on 2 cores; room for a loaded machine.
   */
  static final Duration JOB_DEADLINE = Duration.ofMinutes(4);

  private static final Logger log = LoggerFactory.getLogger(ScenarioRuns.class);
  private static final Map<Scenario, Object> RUNS = new EnumMap<>(Scenario.class);

  /**
   * What a scenario's job left.
   *
   * @param dir the job's directory: json/, pickle/, stacks/ (hung jobs), train.log, pids/
   * @param elapsed from torchrun's start to the last process of the job gone
   * @param exitCode torchrun's exit code when it ended by itself, else null (killed)
   * @param pids every process the job was seen with, all ended
   */
  record Run(Scenario scenario, Path dir, Duration elapsed, Integer exitCode, Set<Long> pids) {
    Path json() {
      return dir.resolve("json");
    }

    Path pickle() {
      return dir.resolve("pickle");
    }

    /** Each rank's profiler trace, for profiled scenarios. */
    Path traces() {
      return dir.resolve("traces");
    }

    /** What each hung rank's worker server answered to dump_traceback; absent for jobs that ended by themselves. */
    Path stacks() {
      return dir.resolve("stacks");
    }
  }

  private ScenarioRuns() {}

  /**
   * The scenario's run, running it now if no test has yet.
   *
   * @throws IllegalStateException when its job failed (every later call throws the same)
   */
  static synchronized Run of(Scenario scenario) {
    Object known = RUNS.get(scenario);
    if (known == null) {
      try {
        known = run(TorchVenv.get(), scenario);
      } catch (IOException | RuntimeException | AssertionError e) {
        if (e instanceof org.opentest4j.TestAbortedException aborted) {
          throw aborted;
        }
        known = new IllegalStateException("the " + scenario + " job failed: " + e.getMessage(), e);
      }
      RUNS.put(scenario, known);
    }
    if (known instanceof IllegalStateException failure) {
      throw failure;
    }
    return (Run) known;
  }

  /** Every run so far, in scenario order; failed ones left out. */
  static synchronized Stream<Run> done() {
    return RUNS.values().stream().filter(Run.class::isInstance).map(Run.class::cast);
  }

  private static Run run(TorchVenv venv, Scenario scenario) throws IOException {
    Path dir = JOBS.resolve(scenario.dirName());
    Dirs.deleteRecursively(dir);
    Files.createDirectories(dir);
    long start = System.nanoTime();
    Integer exitCode;
    Set<Long> pids;
    // A unix socket's path holds at most 107 bytes: the sockets get a short folder of their own.
    Path sockets = Files.createTempDirectory("frdiag-ws");
    try (TorchrunJob job = TorchrunJob.start(venv, dir, scenario.ranks(), scenario.env(),
        sockets.resolve("worker_").toString())) {
      switch (scenario.ending()) {
        case HANGS -> {
          job.awaitDumps(scenario.dumpingRanks(), JOB_DEADLINE, true);
          // What each hung rank's worker server says of its Python threads, as fr-agent asks it during a hang.
          Path stacks = Files.createDirectories(dir.resolve("stacks"));
          WorkerServer server = new WorkerServer(UnixHttpClient.withDefaults());
          for (int r : scenario.dumpingRanks()) {
            Files.writeString(stacks.resolve("dump_traceback_rank_" + r + ".txt"),
                server.stacks(sockets.resolve("worker_" + r + ".sock"), WorkerServer.TRACEBACK));
          }
        }
        case FINISHES, DIES -> {
          job.awaitExit(JOB_DEADLINE);
          // A rank that outlives torchrun may still be writing its pickle.
          job.awaitDumps(scenario.dumpingRanks(), Duration.ofMinutes(1), false);
        }
      }
      exitCode = job.exitCode();
      pids = job.pids();
    } finally {
      Dirs.deleteRecursively(sockets);
    }
    Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
    log.info("real-PyTorch suite: {} ({} ranks) in {} s, {} processes, all ended", scenario.dirName(),
        scenario.ranks(), String.format("%.1f", elapsed.toMillis() / 1000.0), pids.size());
    return new Run(scenario, dir, elapsed, exitCode, pids);
  }
}
