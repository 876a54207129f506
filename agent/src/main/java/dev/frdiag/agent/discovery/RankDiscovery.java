package dev.frdiag.agent.discovery;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Finds the PyTorch ranks of this node in its process table, from the environment their launcher gives them.
 *
 * <p>torchrun's elastic agent ({@code LocalElasticAgent._start_workers}) starts each worker with RANK,
 * LOCAL_RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID and TORCHELASTIC_RESTART_COUNT among others; launchers that are not
 * torchrun (srun with {@code RANK=$SLURM_PROCID}, mpirun wrappers) set RANK, LOCAL_RANK and WORLD_SIZE. Two other
 * kinds of process carry such variables too, and must not be taken for ranks:
 * <ul>
 *   <li>the launcher itself, when the job script exported RANK/LOCAL_RANK/WORLD_SIZE for it (Slurm scripts,
 *       Kubeflow's PyTorchJob, which gives torchrun the node's rank as RANK). Its workers' environment differs
 *       from its own: torchrun sets new values and the TORCHELASTIC_* variables;
 *   <li>the rank's own children (DataLoader workers, compile workers), which inherit the rank's environment
 *       unchanged.
 * </ul>
 * So the rule, applied to each candidate and the nearest candidate among its ancestors: when the two have the same
 * worker variables ({@link #WORKER_KEYS}), the child inherited them and the ancestor is the rank; when they differ,
 * the ancestor launched the child and the child is the rank. Of two unrelated processes claiming the same rank (a
 * restarted worker whose predecessor has not exited yet), the younger is followed.
 *
 * <p>Not thread-safe; the agent scans from its one thread.
 */
public final class RankDiscovery {
  /** The variables that make up a worker's identity; a child that has all of them unchanged inherited them. */
  static final List<String> WORKER_KEYS = List.of("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID",
      "TORCHELASTIC_RESTART_COUNT", "GROUP_RANK");
  /** Deeper process trees than this are not walked (a parent loop in a racing read must not hang a scan). */
  private static final int MAX_DEPTH = 64;

  private final ProcessTable table;
  private final String runId;

  /**
   * @param runId when not null, only processes whose TORCHELASTIC_RUN_ID is this are ranks (one job of several
   *     on the node)
   */
  public RankDiscovery(ProcessTable table, String runId) {
    this.table = Objects.requireNonNull(table, "table");
    this.runId = runId == null || runId.isEmpty() ? null : runId;
  }

  /** The ranks running now, by global rank. */
  public Map<Integer, TorchRank> scan() {
    Map<Long, ProcessTable.Entry> byPid = new HashMap<>();
    for (ProcessTable.Entry e : table.processes()) {
      byPid.put(e.pid(), e);
    }
    Map<Long, TorchRank> candidates = new HashMap<>();
    for (ProcessTable.Entry e : byPid.values()) {
      Optional<Map<String, String>> env = table.environment(e.pid());
      if (env.isPresent()) {
        TorchRank r = worker(e.pid(), env.get());
        if (r != null) {
          candidates.put(e.pid(), r);
        }
      }
    }
    List<Long> dropped = new ArrayList<>();
    for (TorchRank child : candidates.values()) {
      TorchRank ancestor = nearestCandidateAncestor(child.pid(), byPid, candidates);
      if (ancestor == null) {
        continue;
      }
      // Same worker variables: the child inherited them (a DataLoader worker). Different: the ancestor started it.
      dropped.add(sameWorker(ancestor, child) ? child.pid() : ancestor.pid());
    }
    dropped.forEach(candidates::remove);
    Map<Integer, TorchRank> ranks = new TreeMap<>();
    for (TorchRank r : candidates.values()) {
      ranks.merge(r.rank(), r, (a, b) -> younger(a, b, byPid));
    }
    return ranks;
  }

  /** The rank {@code env} describes, or null when it is not a PyTorch worker's (of the job asked for). */
  private TorchRank worker(long pid, Map<String, String> env) {
    int rank = integer(env.get("RANK"));
    int worldSize = integer(env.get("WORLD_SIZE"));
    String localRank = env.get("LOCAL_RANK");
    String run = env.getOrDefault("TORCHELASTIC_RUN_ID", "");
    // RANK and WORLD_SIZE alone are too common (MPI wrappers, Kubeflow's env for the launcher): a worker also has
    // LOCAL_RANK or was started by torchrun.
    if (rank < 0 || worldSize < 1 || rank >= worldSize || localRank == null && run.isEmpty()) {
      return null;
    }
    if (runId != null && !runId.equals(run)) {
      return null;
    }
    return new TorchRank(rank, localRank == null ? -1 : Math.max(-1, integer(localRank)), worldSize, pid, run,
        env);
  }

  private static boolean sameWorker(TorchRank a, TorchRank b) {
    for (String key : WORKER_KEYS) {
      if (!Objects.equals(a.environment().get(key), b.environment().get(key))) {
        return false;
      }
    }
    return true;
  }

  private static TorchRank nearestCandidateAncestor(long pid, Map<Long, ProcessTable.Entry> byPid,
      Map<Long, TorchRank> candidates) {
    ProcessTable.Entry e = byPid.get(pid);
    for (int depth = 0; e != null && depth < MAX_DEPTH; depth++) {
      long parent = e.ppid();
      if (parent <= 0 || parent == e.pid()) {
        return null;
      }
      TorchRank r = candidates.get(parent);
      if (r != null) {
        return r;
      }
      e = byPid.get(parent);
    }
    return null;
  }

  private static TorchRank younger(TorchRank a, TorchRank b, Map<Long, ProcessTable.Entry> byPid) {
    long sa = byPid.get(a.pid()).startTicks();
    long sb = byPid.get(b.pid()).startTicks();
    if (sa != sb) {
      return sa > sb ? a : b;
    }
    return a.pid() > b.pid() ? a : b;
  }

  /** A non-negative decimal int, or -1. */
  private static int integer(String s) {
    if (s == null || s.isEmpty() || s.length() > 9) {
      return -1;
    }
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) < '0' || s.charAt(i) > '9') {
        return -1;
      }
    }
    return Integer.parseInt(s);
  }
}
