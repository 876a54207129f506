package dev.frdiag.agent.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Discovery over a hand-built proc tree: what torchrun, its workers and their children look like in /proc. */
class RankDiscoveryTest {
  @TempDir
  Path proc;

  @BeforeEach
  void node() throws IOException {
    process(1, 0, 100, "systemd", Map.of("PATH", "/bin"));
    // A Slurm step: srun's shell exported the rank variables for torchrun, which gives its workers its own.
    process(500, 1, 200, "python3", env("RANK", "1", "LOCAL_RANK", "0", "WORLD_SIZE", "2", "SLURM_JOB_ID", "77"));
    process(501, 500, 300, "python3", worker(2, 0, "job-a", 0));
    process(502, 500, 301, "python3", worker(3, 1, "job-a", 0));
    // Rank 2's DataLoader worker inherits the rank's environment unchanged.
    process(601, 501, 400, "pt_data_worker", worker(2, 0, "job-a", 0));
    // A process with rank-like variables but no LOCAL_RANK nor torchrun's: an MPI wrapper, not a worker.
    process(700, 1, 500, "mpirun", env("RANK", "0", "WORLD_SIZE", "4"));
  }

  @Test
  void findsTheWorkersNotTheirLauncherNorTheirChildren() {
    Map<Integer, TorchRank> ranks = new RankDiscovery(new ProcProcessTable(proc), null).scan();

    assertThat(ranks).containsOnlyKeys(2, 3);
    assertThat(ranks.get(2).pid()).isEqualTo(501);
    assertThat(ranks.get(2).localRank()).isZero();
    assertThat(ranks.get(2).worldSize()).isEqualTo(4);
    assertThat(ranks.get(2).runId()).isEqualTo("job-a");
    assertThat(ranks.get(3).pid()).isEqualTo(502);
    assertThat(ranks.get(3).localRank()).isEqualTo(1);
  }

  @Test
  void skipsProcessesWhoseEnvironmentIsUnreadable() throws IOException {
    process(800, 1, 600, "python3", worker(0, 0, "job-a", 0));
    Files.setPosixFilePermissions(proc.resolve("800/environ"), PosixFilePermissions.fromString("---------"));
    // Root reads anything; only the missing environ can be tested there.
    if (Files.isReadable(proc.resolve("800/environ"))) {
      Files.delete(proc.resolve("800/environ"));
    }
    // Gone between listing and reading: a stat without an environ.
    Files.createDirectories(proc.resolve("801"));
    Files.writeString(proc.resolve("801/stat"), stat(801, 1, 601, "python3"));

    assertThat(new RankDiscovery(new ProcProcessTable(proc), null).scan()).containsOnlyKeys(2, 3);
  }

  @Test
  void followsARestartedRankToItsNewProcess() throws IOException {
    RankDiscovery discovery = new RankDiscovery(new ProcProcessTable(proc), null);
    assertThat(discovery.scan().get(3).pid()).isEqualTo(502);

    // torchrun restarts the worker group: rank 3's new process starts while the old one is still exiting.
    process(503, 500, 900, "python3", worker(3, 1, "job-a", 1));
    assertThat(discovery.scan().get(3).pid()).isEqualTo(503);

    delete(502);
    assertThat(discovery.scan().get(3).pid()).isEqualTo(503);
    assertThat(discovery.scan().get(2).pid()).isEqualTo(501);
  }

  @Test
  void keepsOnlyTheRunAskedFor() throws IOException {
    process(900, 1, 700, "python3", worker(0, 0, "job-b", 0));

    assertThat(new RankDiscovery(new ProcProcessTable(proc), null).scan()).containsOnlyKeys(0, 2, 3);
    assertThat(new RankDiscovery(new ProcProcessTable(proc), "job-b").scan()).containsOnlyKeys(0);
  }

  @Test
  void readsNulSeparatedEnvironmentsWithEqualsInValues() {
    byte[] bytes = "A=1\0B=x=y\0\0NOEQUALS\0C=\0".getBytes(StandardCharsets.UTF_8);

    assertThat(ProcProcessTable.parseEnviron(bytes)).containsExactlyInAnyOrderEntriesOf(
        Map.of("A", "1", "B", "x=y", "C", ""));
  }

  @Test
  void readsTheParentPastACommandNameWithSpacesAndParentheses() throws IOException {
    process(950, 501, 1000, "a) b (c", Map.of());

    assertThat(new ProcProcessTable(proc).processes())
        .contains(new ProcessTable.Entry(950, 501, 1000));
  }

  private static Map<String, String> worker(int rank, int localRank, String runId, int restart) {
    return env("RANK", Integer.toString(rank), "LOCAL_RANK", Integer.toString(localRank), "WORLD_SIZE", "4",
        "GROUP_RANK", "1", "TORCHELASTIC_RUN_ID", runId, "TORCHELASTIC_RESTART_COUNT", Integer.toString(restart),
        "SLURM_JOB_ID", "77");
  }

  private static Map<String, String> env(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  private void process(long pid, long ppid, long start, String comm, Map<String, String> env) throws IOException {
    Path dir = Files.createDirectories(proc.resolve(Long.toString(pid)));
    Files.writeString(dir.resolve("stat"), stat(pid, ppid, start, comm));
    StringBuilder sb = new StringBuilder();
    env.forEach((k, v) -> sb.append(k).append('=').append(v).append('\0'));
    Files.writeString(dir.resolve("environ"), sb);
  }

  private void delete(long pid) throws IOException {
    Path dir = proc.resolve(Long.toString(pid));
    try (var files = Files.list(dir)) {
      for (Path f : files.toList()) {
        Files.delete(f);
      }
    }
    Files.delete(dir);
  }

  /** A stat line as Linux writes it: ppid is field 4, starttime field 22. */
  private static String stat(long pid, long ppid, long start, String comm) {
    return pid + " (" + comm + ") S " + ppid + " " + pid + " " + pid + " 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
        + start + " 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";
  }
}
