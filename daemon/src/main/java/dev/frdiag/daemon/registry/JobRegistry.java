package dev.frdiag.daemon.registry;

import dev.frdiag.proto.v1.NodeContext;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** Every job the daemon knows, by id. Jobs are independent: nothing here holds more than one job's lock. */
public final class JobRegistry {
  // Concurrent rather than one lock: ranks of different jobs connect at once and must not wait for each other.
  private final ConcurrentHashMap<String, Job> jobs = new ConcurrentHashMap<>();
  /** Node context posted before the job's first rank connected; handed to the job when it appears. */
  private final ConcurrentHashMap<String, Map<String, NodeContext>> earlyContext = new ConcurrentHashMap<>();
  static final int MAX_NODES_PER_JOB = 65_536;
  private final int window;

  /**
   * @param window records kept in memory per rank between snapshots
   */
  public JobRegistry(int window) {
    if (window < 1) {
      throw new IllegalArgumentException("window must be at least 1, got " + window);
    }
    this.window = window;
  }

  /** The job, created on first sight with {@code worldSize}. */
  public Job getOrCreate(String jobId, int worldSize, long nowMs) {
    return jobs.computeIfAbsent(jobId, id -> {
      Job job = new Job(id, worldSize, window, nowMs);
      Map<String, NodeContext> early = earlyContext.remove(id);
      if (early != null) {
        early.values().forEach(job::context);
      }
      return job;
    });
  }

  /** Stores what one node says, with its job or until the job appears; a newer post replaces the node's older one. */
  public void context(NodeContext node) {
    Job job = jobs.get(node.getJobId());
    if (job != null) {
      job.context(node);
      return;
    }
    Map<String, NodeContext> early = earlyContext.computeIfAbsent(node.getJobId(), j -> new ConcurrentHashMap<>());
    if (early.size() < MAX_NODES_PER_JOB || early.containsKey(node.getHostname())) {
      early.put(node.getHostname(), node);
    }
  }

  public Optional<Job> find(String jobId) {
    return Optional.ofNullable(jobs.get(jobId));
  }

  public Collection<Job> all() {
    return List.copyOf(jobs.values());
  }
}
