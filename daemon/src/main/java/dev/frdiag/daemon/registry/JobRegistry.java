package dev.frdiag.daemon.registry;

import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** Every job the daemon knows, by id. Jobs are independent: nothing here holds more than one job's lock. */
public final class JobRegistry {
  private final ConcurrentHashMap<String, Job> jobs = new ConcurrentHashMap<>();
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
    return jobs.computeIfAbsent(jobId, id -> new Job(id, worldSize, window, nowMs));
  }

  public Optional<Job> find(String jobId) {
    return Optional.ofNullable(jobs.get(jobId));
  }

  public Collection<Job> all() {
    return List.copyOf(jobs.values());
  }
}
