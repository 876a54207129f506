package dev.frdiag.daemon.settings;

import dev.frdiag.daemon.store.Retention;
import java.time.Duration;
import java.util.Objects;

/**
 * Bounds on everything a client can make the daemon hold, so that no peer (buggy, lost or hostile) can exhaust its
 * memory or CPU and cost other jobs their diagnosis. Build with {@link #builder()}; every value is validated.
 *
 * @param maxJobs jobs tracked at once; a Hello for a further job forgets the idle job heard from longest ago, and is
 *     refused only when none is idle (default 10,000)
 * @param maxGroupsPerRank process groups one rank may announce in all (default 4,096)
 * @param maxContextBytesPerJob node context (NCCL log findings, counters) kept per job (default 64 MiB)
 * @param maxEarlyContextJobs jobs whose node context may wait for their first rank (default 1,024)
 * @param jobIdleExpiry a job with no live rank and no open incident is forgotten after this (default 1 h); its
 *     reports stay in the store
 * @param maxSnapshotDeadline the longest snapshot deadline a {@code DiagnoseNow} may ask for (default 60 s)
 * @param diagnoseInterval the shortest time between two on-demand diagnoses of one job; a request while one runs
 *     joins it (default 1 s)
 * @param maxInvestigations investigations (snapshot gathers) in flight across all jobs (default 64)
 * @param maxWatchers {@code WatchIncidents} subscribers at once (default 256)
 * @param watcherBacklog reports queued for one watcher that is not reading before it is cut off (default 64)
 * @param retention which stored reports are kept (default: all)
 * @param maxRecordsPerJob collective records one job's ranks may make the daemon hold at once, windows and snapshot
 *     replies alike (default 1,000,000): a job too large to give every rank the daemon's full window keeps fewer
 *     per rank, never fewer than {@value #MIN_WINDOW}
 * @param maxStateBytes the heap all jobs together may take with what their clients sent: ranks, process groups and
 *     their members, group progress, events, frames, record windows, node context (default
 *     {@value #DEFAULT_STATE_SHARE_PERCENT} % of the JVM's maximum heap); more is refused, and idle jobs are
 *     forgotten, oldest first, while it is nine tenths full
 * @param maxJobStateBytes the same for one job (default {@value #DEFAULT_JOB_STATE_SHARE_PERCENT} % of the heap), so
 *     that one job's clients cannot take the room of every other job
 * @param watcherBacklogBytes the bytes of reports queued for one watcher that is not reading before it is cut off
 *     (default 8 MiB); watchers share each report's bytes, so all together hold no more
 */
public record Limits(int maxJobs, int maxGroupsPerRank, long maxContextBytesPerJob, int maxEarlyContextJobs,
    Duration jobIdleExpiry, Duration maxSnapshotDeadline, Duration diagnoseInterval, int maxInvestigations,
    int maxWatchers, int watcherBacklog, Retention retention, long maxRecordsPerJob, long maxStateBytes,
    long maxJobStateBytes, long watcherBacklogBytes) {

  public static final int DEFAULT_MAX_JOBS = 10_000;
  public static final int DEFAULT_MAX_GROUPS_PER_RANK = 4096;
  public static final long DEFAULT_MAX_CONTEXT_BYTES_PER_JOB = 64L * 1024 * 1024;
  public static final int DEFAULT_MAX_EARLY_CONTEXT_JOBS = 1024;
  public static final Duration DEFAULT_JOB_IDLE_EXPIRY = Duration.ofHours(1);
  public static final Duration DEFAULT_MAX_SNAPSHOT_DEADLINE = Duration.ofSeconds(60);
  public static final Duration DEFAULT_DIAGNOSE_INTERVAL = Duration.ofSeconds(1);
  public static final int DEFAULT_MAX_INVESTIGATIONS = 64;
  public static final int DEFAULT_MAX_WATCHERS = 256;
  public static final int DEFAULT_WATCHER_BACKLOG = 64;
  public static final long DEFAULT_MAX_RECORDS_PER_JOB = 1_000_000;
  /**
   * The daemon's state limit as a share of its heap: the rest is for the analyses of incidents, snapshot replies
   * while they are gathered, and reports.
   */
  public static final int DEFAULT_STATE_SHARE_PERCENT = 70;
  /**
   * One job's state limit as a share of the heap: a job of 2,000 ranks or more holds the whole record budget
   * ({@link #DEFAULT_MAX_RECORDS_PER_JOB}), some 320 MB counted with its ranks' state at 16,384 ranks, which a 1 GB
   * heap holds.
   */
  public static final int DEFAULT_JOB_STATE_SHARE_PERCENT = 50;
  public static final long DEFAULT_WATCHER_BACKLOG_BYTES = 8L * 1024 * 1024;
  /**
   * The fewest records kept per rank however large the job: a training step issues a few to a few dozen
   * collectives, so this still holds the stuck one and the steps before it.
   */
  public static final int MIN_WINDOW = 32;

  public Limits {
    atLeast(maxJobs, 1, "maxJobs");
    atLeast(maxGroupsPerRank, 1, "maxGroupsPerRank");
    if (maxContextBytesPerJob < 64 * 1024) {
      throw new IllegalArgumentException("maxContextBytesPerJob must be at least 64 KiB, got " + maxContextBytesPerJob);
    }
    atLeast(maxEarlyContextJobs, 0, "maxEarlyContextJobs");
    positive(jobIdleExpiry, "jobIdleExpiry");
    positive(maxSnapshotDeadline, "maxSnapshotDeadline");
    Objects.requireNonNull(diagnoseInterval, "diagnoseInterval");
    if (diagnoseInterval.isNegative()) {
      throw new IllegalArgumentException("diagnoseInterval must not be negative, got " + diagnoseInterval);
    }
    atLeast(maxInvestigations, 1, "maxInvestigations");
    atLeast(maxWatchers, 0, "maxWatchers");
    atLeast(watcherBacklog, 1, "watcherBacklog");
    Objects.requireNonNull(retention, "retention");
    atLeast(maxRecordsPerJob, MIN_WINDOW, "maxRecordsPerJob");
    atLeast(maxStateBytes, 1024 * 1024, "maxStateBytes");
    atLeast(maxJobStateBytes, 1024 * 1024, "maxJobStateBytes");
    atLeast(watcherBacklogBytes, 64 * 1024, "watcherBacklogBytes");
  }

  /** {@code percent} % of the most heap this JVM may use. */
  static long ofHeap(int percent) {
    return Runtime.getRuntime().maxMemory() / 100 * percent;
  }

  /**
   * The records kept per rank of a job of {@code worldSize} ranks: {@code window}, or less when the job's ranks
   * would hold more than {@link #maxRecordsPerJob} in all, never under {@value #MIN_WINDOW}.
   */
  public int windowFor(int window, int worldSize) {
    long share = maxRecordsPerJob / Math.max(1, worldSize);
    return (int) Math.min(window, Math.max(MIN_WINDOW, share));
  }

  /** The documented defaults. */
  public static Limits defaults() {
    return builder().build();
  }

  private static void atLeast(long v, long min, String name) {
    if (v < min) {
      throw new IllegalArgumentException(name + " must be at least " + min + ", got " + v);
    }
  }

  /** Every duration setting of the daemon, here and in {@link DaemonSettings}, is checked the same way. */
  static void positive(Duration d, String name) {
    Objects.requireNonNull(d, name);
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, got " + d);
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder for {@link Limits}, starting from the documented defaults. */
  public static final class Builder {
    private int maxJobs = DEFAULT_MAX_JOBS;
    private int maxGroupsPerRank = DEFAULT_MAX_GROUPS_PER_RANK;
    private long maxContextBytesPerJob = DEFAULT_MAX_CONTEXT_BYTES_PER_JOB;
    private int maxEarlyContextJobs = DEFAULT_MAX_EARLY_CONTEXT_JOBS;
    private Duration jobIdleExpiry = DEFAULT_JOB_IDLE_EXPIRY;
    private Duration maxSnapshotDeadline = DEFAULT_MAX_SNAPSHOT_DEADLINE;
    private Duration diagnoseInterval = DEFAULT_DIAGNOSE_INTERVAL;
    private int maxInvestigations = DEFAULT_MAX_INVESTIGATIONS;
    private int maxWatchers = DEFAULT_MAX_WATCHERS;
    private int watcherBacklog = DEFAULT_WATCHER_BACKLOG;
    private Retention retention = Retention.KEEP_ALL;
    private long maxRecordsPerJob = DEFAULT_MAX_RECORDS_PER_JOB;
    /** Zero until set: then the share of the heap. */
    private long maxStateBytes;
    private long maxJobStateBytes;
    private long watcherBacklogBytes = DEFAULT_WATCHER_BACKLOG_BYTES;

    public Builder maxJobs(int v) {
      maxJobs = v;
      return this;
    }

    public Builder maxGroupsPerRank(int v) {
      maxGroupsPerRank = v;
      return this;
    }

    public Builder maxContextBytesPerJob(long v) {
      maxContextBytesPerJob = v;
      return this;
    }

    public Builder maxEarlyContextJobs(int v) {
      maxEarlyContextJobs = v;
      return this;
    }

    public Builder jobIdleExpiry(Duration v) {
      jobIdleExpiry = v;
      return this;
    }

    public Builder maxSnapshotDeadline(Duration v) {
      maxSnapshotDeadline = v;
      return this;
    }

    public Builder diagnoseInterval(Duration v) {
      diagnoseInterval = v;
      return this;
    }

    public Builder maxInvestigations(int v) {
      maxInvestigations = v;
      return this;
    }

    public Builder maxWatchers(int v) {
      maxWatchers = v;
      return this;
    }

    public Builder watcherBacklog(int v) {
      watcherBacklog = v;
      return this;
    }

    public Builder retention(Retention v) {
      retention = v;
      return this;
    }

    public Builder maxRecordsPerJob(long v) {
      maxRecordsPerJob = v;
      return this;
    }

    /** The heap all jobs together may take with their clients' state, in bytes; 0 for the default share. */
    public Builder maxStateBytes(long v) {
      maxStateBytes = v;
      return this;
    }

    /** The heap one job may take with its clients' state, in bytes; 0 for the default share. */
    public Builder maxJobStateBytes(long v) {
      maxJobStateBytes = v;
      return this;
    }

    public Builder watcherBacklogBytes(long v) {
      watcherBacklogBytes = v;
      return this;
    }

    public Limits build() {
      return new Limits(maxJobs, maxGroupsPerRank, maxContextBytesPerJob, maxEarlyContextJobs, jobIdleExpiry,
          maxSnapshotDeadline, diagnoseInterval, maxInvestigations, maxWatchers, watcherBacklog, retention,
          maxRecordsPerJob, maxStateBytes == 0 ? ofHeap(DEFAULT_STATE_SHARE_PERCENT) : maxStateBytes,
          maxJobStateBytes == 0 ? ofHeap(DEFAULT_JOB_STATE_SHARE_PERCENT) : maxJobStateBytes, watcherBacklogBytes);
    }
  }
}
