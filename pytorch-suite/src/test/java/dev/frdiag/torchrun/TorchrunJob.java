package dev.frdiag.torchrun;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A real torchrun job of train.py on gloo, on loopback: {@code torchrun --standalone --nproc-per-node N
 * --max-restarts 0 --no-python bash wrapper.sh <dir>}, its output in {@code <dir>/train.log}, the ranks' dumps in
 * {@code <dir>/json} and {@code <dir>/pickle}. {@link #close} kills the launcher and every rank by pid, whatever
 * happened before. Not thread-safe.
 */
final class TorchrunJob implements AutoCloseable {
  /** train.py and wrapper.sh. */
  static final Path SCRIPTS = Path.of("src", "test", "python").toAbsolutePath();
  /** train.py's setting: a rank dumps once it has made no step for this long. */
  static final Duration HANG_THRESHOLD = Duration.ofSeconds(3);
  /**
   * The same setting, in seconds, for a job meant to finish: it dumps when it finishes, and a dump a loaded machine
   * made it take mid-run (3 s without a step while the profiler writes) is a snapshot of ranks at different
   * collectives that no analysis can tell from a hang.
   */
  static final String FINISHING_HANG_SECS = "120";

  private final Path dir;
  private final Process launcher;
  private final ProcessTree tree;
  private boolean closed;

  private TorchrunJob(Path dir, Process launcher) {
    this.dir = dir;
    this.launcher = launcher;
    this.tree = new ProcessTree(launcher);
  }

  /**
   * Starts {@code ranks} ranks of train.py with {@code settings} (its fault switch) added to the environment.
   *
   * @param dir an empty directory of the job's own: its path is on every rank's command line
   * @param workerSockets when not null, rank r serves torch's worker server on {@code <workerSockets>r.sock}
   */
  static TorchrunJob start(TorchVenv venv, Path dir, int ranks, Map<String, String> settings, String workerSockets)
      throws IOException {
    Files.createDirectories(dir.resolve("tmp"));
    ProcessBuilder builder = new ProcessBuilder(venv.bin("torchrun").toString(), "--standalone",
        "--nproc-per-node", Integer.toString(ranks), "--max-restarts", "0", "--no-python",
        "bash", SCRIPTS.resolve("wrapper.sh").toString(), dir.toString())
        .directory(dir.toFile())
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve("train.log").toFile())
        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    Map<String, String> env = builder.environment();
    env.put("PATH", venv.bin("").toString() + ":" + env.getOrDefault("PATH", "/usr/bin:/bin"));
    env.put("GLOO_SOCKET_IFNAME", "lo");
    env.put("OMP_NUM_THREADS", "1");
    env.put("PYTHONUNBUFFERED", "1");
    env.put("TORCH_FR_BUFFER_SIZE", "2000");
    // torchrun and the ranks leave their temporary files (rendezvous, logs) in the job's own folder.
    env.put("TMPDIR", dir.resolve("tmp").toString());
    env.put("HANG_SECS", Long.toString(HANG_THRESHOLD.toSeconds()));
    env.put("STEPS", "50");
    if (workerSockets != null) {
      env.put("WORKER_SOCKET_PREFIX", workerSockets);
    }
    env.putAll(settings);
    Files.writeString(dir.resolve("settings.txt"),
        String.join("\n", new TreeMap<>(settings).entrySet().stream().map(Object::toString).toList()) + "\n");
    return new TorchrunJob(dir, builder.start());
  }

  Path dir() {
    return dir;
  }

  /**
   * When rank 0 began training, as its log line "[rank 0 HH:MM:SS] … started" says (today, local time, to the
   * second); waits for the line.
   */
  java.time.Instant started() {
    java.util.regex.Pattern line = java.util.regex.Pattern.compile("\\[rank 0 (\\d\\d:\\d\\d:\\d\\d)\\] \\S+ job of \\d+ "
        + "ranks started");
    String[] at = new String[1];
    await("rank 0's start").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(200)).until(() -> {
      java.util.regex.Matcher m = line.matcher(Files.readString(dir.resolve("train.log")));
      if (m.find()) {
        at[0] = m.group(1);
      }
      return at[0] != null;
    });
    // train.py prints local time, as Python's time.strftime does.
    return java.time.LocalDate.now().atTime(java.time.LocalTime.parse(at[0])).atZone(java.time.ZoneId.systemDefault())
        .toInstant();
  }

  /** The dump of {@code rank} in {@code format} (json or pickle); it exists only once complete. */
  Path dump(String format, int rank) {
    return dir.resolve(format).resolve("trace_rank_" + rank);
  }

  /**
   * Waits until every rank of {@code ranks} has written both dumps (the pickle comes last), noting the ranks' pids
   * as they appear.
   *
   * @param whileRunning whether torchrun must still be running meanwhile (the job hangs)
   * @throws org.awaitility.core.ConditionTimeoutException after {@code deadline}
   */
  void awaitDumps(Set<Integer> ranks, Duration deadline, boolean whileRunning) {
    await("dumps of ranks " + ranks + " in " + dir).atMost(deadline).pollInterval(Duration.ofMillis(200))
        .failFast("torchrun ended before the dumps were written; see " + dir.resolve("train.log"),
            () -> whileRunning && !launcher.isAlive())
        .until(() -> {
          noteProcesses();
          return ranks.stream().allMatch(r -> Files.exists(dump("json", r)) && Files.exists(dump("pickle", r)));
        });
  }

  /**
   * Waits for torchrun to end by itself.
   *
   * @return its exit code
   */
  int awaitExit(Duration deadline) {
    await("torchrun of " + dir + " to end").atMost(deadline).pollInterval(Duration.ofMillis(200)).until(() -> {
      noteProcesses();
      return !launcher.isAlive();
    });
    return launcher.exitValue();
  }

  /** The launcher's exit code, if it has ended. */
  Integer exitCode() {
    return launcher.isAlive() ? null : launcher.exitValue();
  }

  private void noteProcesses() {
    if (launcher.isAlive()) {
      tree.addDescendants(launcher.toHandle());
    }
    Path pids = dir.resolve("pids");
    if (Files.isDirectory(pids)) {
      try (Stream<Path> files = Files.list(pids)) {
        for (Path f : files.filter(f -> f.getFileName().toString().matches("rank_\\d+")).toList()) {
          tree.addPid(Long.parseLong(Files.readString(f).strip()));
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /**
   * Kills the launcher and every rank by pid, and checks that nothing of the job still runs.
   *
   * @throws IllegalStateException when a process of the job is still alive afterwards
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    noteProcesses();
    List<Long> alive = tree.killAll();
    List<String> strays = ProcessTree.runningWith(dir.toString());
    if (!alive.isEmpty() || !strays.isEmpty()) {
      throw new IllegalStateException("the job in " + dir + " left processes running: killed but alive " + alive
          + ", others " + strays);
    }
  }

  /** Every pid the job was seen with: the launcher, its descendants and the ranks' own. */
  Set<Long> pids() {
    return tree.pids();
  }
}
