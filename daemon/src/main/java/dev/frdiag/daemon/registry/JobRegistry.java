package dev.frdiag.daemon.registry;

import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.RankIdentity;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Every job the daemon knows, by id. Jobs are independent: nothing here holds more than one job's lock. */
public final class JobRegistry {
  private static final Logger log = LoggerFactory.getLogger(JobRegistry.class);

  // Concurrent rather than one lock: ranks of different jobs connect at once and must not wait for each other.
  private final ConcurrentHashMap<String, Job> jobs = new ConcurrentHashMap<>();
  /** Node context posted before the job's first rank connected; handed to the job when it appears. */
  private final ConcurrentHashMap<String, EarlyContext> earlyContext = new ConcurrentHashMap<>();
  private final int window;
  private final Limits limits;
  /** Idle jobs forgotten to make room for new ones at the job limit, or for the state of others. */
  private final AtomicLong evictions = new AtomicLong();
  /** The bytes of what clients made the daemon hold, each job's and the daemon's. */
  private final StateBudget budget;
  /** All node context waiting for jobs not seen yet: together no more than one job's context. */
  private final StateBudget.Share earlyShare;
  /** The on-demand diagnoses running across every job, against the daemon's limit. */
  private final OnDemandSlots onDemandSlots;

  /** Node posts of a job nobody has connected for yet, and when the first came. */
  private record EarlyContext(NodeContexts nodes, long firstPostNanos) {}

  /**
   * @param window records kept in memory per rank between snapshots
   */
  public JobRegistry(int window) {
    this(window, Limits.defaults());
  }

  public JobRegistry(int window, Limits limits) {
    if (window < 1) {
      throw new IllegalArgumentException("window must be at least 1, got " + window);
    }
    this.window = window;
    this.limits = limits;
    this.budget = new StateBudget(limits.maxStateBytes());
    this.earlyShare = budget.share("the node context waiting for jobs no rank has connected for",
        limits.maxContextBytesPerJob(), "--max-context-bytes");
    this.onDemandSlots = new OnDemandSlots(limits.maxInvestigations());
  }

  /** The job, created on first sight with {@code worldSize}. */
  public Job getOrCreate(String jobId, int worldSize, long nowMs) {
    return getOrCreate(jobId, worldSize, nowMs, 0);
  }

  /**
   * The job, created on first sight with {@code worldSize}. At the job limit the idle job heard from longest ago
   * (no rank connected, no incident open) is forgotten to make room: a daemon full of jobs that ended must not
   * lock new ones out until they expire. Its reports stay in the store.
   *
   * @throws LimitExceededException when it is new, the daemon already tracks its maximum number of jobs and none
   *     of them is idle
   */
  public Job getOrCreate(String jobId, int worldSize, long nowMs, long nowNanos) {
    Job known = jobs.get(jobId);
    if (known != null) {
      return known;
    }
    while (jobs.size() >= limits.maxJobs()) {
      if (!evictOldestIdle(nowNanos, "at the limit of " + limits.maxJobs() + " jobs")) {
        throw new LimitExceededException("the daemon tracks " + jobs.size() + " jobs, its limit, and every one "
            + "has a rank connected or an incident open; job " + jobId + " is refused until one ends");
      }
    }
    relieve(nowNanos);
    return jobs.computeIfAbsent(jobId, id -> {
      Job job = new Job(id, worldSize, window, limits, budget.share("job " + id, limits.maxJobStateBytes(),
          "--max-job-state-bytes"), onDemandSlots, nowMs, nowNanos);
      EarlyContext early = earlyContext.remove(id);
      if (early != null) {
        List<NodeContext> posted;
        synchronized (early) {
          posted = early.nodes().all();
          early.nodes().release();
        }
        for (NodeContext n : posted) {
          try {
            job.context(n, nowNanos);
          } catch (LimitExceededException e) {
            log.warn("job {}: node context of {} posted before its first rank is dropped: {}", id, n.getHostname(),
                e.getMessage());
          }
        }
      }
      return job;
    });
  }

  /**
   * A job whose ranks {@code connected} were connected when the daemon stopped, bound to {@code writers}: tracked
   * again at once, and not
   * judged until they are back or {@code untilNanos} has passed ({@link Job#expectBack}). Left out, with a warning,
   * past the job limit.
   */
  public void restore(String jobId, int worldSize, List<RankIdentity> connected, List<String> writers, long nowMs,
      long nowNanos, long untilNanos) {
    Job job;
    try {
      job = getOrCreate(jobId, worldSize, nowMs, nowNanos);
    } catch (LimitExceededException e) {
      log.warn("job {}: its ranks connected before the restart are not waited for: {}", jobId, e.getMessage());
      return;
    }
    job.expectBack(connected, writers, untilNanos);
    log.info("job {}: waiting up to {} s for its {} ranks connected before the restart to come back before judging"
        + " it", jobId, Math.max(0, untilNanos - nowNanos) / 1_000_000_000L, connected.size());
  }

  /**
   * Forgets idle jobs, heard from longest ago first, while the daemon holds more than nine tenths of its state
   * limit: what jobs that ended hold must not cost a running job its ranks' messages.
   */
  private void relieve(long nowNanos) {
    while (budget.used() > budget.max() / 10 * 9
        && evictOldestIdle(nowNanos, "as the daemon holds " + budget.used() + " bytes of client state, more than "
            + "nine tenths of its limit of " + budget.max())) {
      // One job at a time, the oldest first.
    }
  }

  /**
   * Stores what one node says, with its job or until the job appears; a newer post replaces the node's older one.
   *
   * @throws LimitExceededException when the job's context, or the context waiting for jobs not seen yet, is full
   */
  public void context(NodeContext node, long nowNanos) {
    Job job = jobs.get(node.getJobId());
    if (job != null) {
      job.context(node, nowNanos);
      return;
    }
    EarlyContext early = earlyContext.get(node.getJobId());
    if (early == null) {
      if (earlyContext.size() >= limits.maxEarlyContextJobs()) {
        budget.countRefusal(StateBudget.State.CONTEXT, StateBudget.Scope.DAEMON);
        throw new LimitExceededException("node context is already waiting for " + earlyContext.size()
            + " jobs that no rank has connected for; context for job " + node.getJobId() + " is refused");
      }
      early = earlyContext.computeIfAbsent(node.getJobId(), j -> new EarlyContext(
          new NodeContexts("node context waiting for job " + j, limits.maxContextBytesPerJob(), earlyShare),
          nowNanos));
    }
    synchronized (early) {
      early.nodes().put(node);
    }
  }

  /**
   * Forgets jobs that have been idle for the limits' expiry (no rank connected, no incident open) and node context
   * whose job never appeared; returns the ids of the jobs forgotten.
   */
  public List<String> expireIdle(long nowNanos) {
    Duration expiry = limits.jobIdleExpiry();
    List<String> expired = new ArrayList<>();
    for (Job job : jobs.values()) {
      if (job.idle(nowNanos, expiry) && jobs.remove(job.id(), job)) {
        job.release();
        expired.add(job.id());
      }
    }
    earlyContext.entrySet().removeIf(e -> {
      if (nowNanos - e.getValue().firstPostNanos() < expiry.toNanos()) {
        return false;
      }
      synchronized (e.getValue()) {
        e.getValue().nodes().release();
      }
      return true;
    });
    relieve(nowNanos);
    return expired;
  }

  /**
   * Forgets the idle job heard from longest ago; false when no job is idle. Each job's lock is taken on its own,
   * one after the other, as everywhere in the registry.
   */
  private boolean evictOldestIdle(long nowNanos, String why) {
    Job oldest = null;
    long oldestSince = Long.MAX_VALUE;
    for (Job job : jobs.values()) {
      long since = job.idleSinceNanos(nowNanos);
      if (since >= 0 && since < oldestSince) {
        oldest = job;
        oldestSince = since;
      }
    }
    if (oldest == null) {
      return false;
    }
    if (jobs.remove(oldest.id(), oldest)) {
      oldest.release();
      evictions.incrementAndGet();
      log.info("job {}: forgotten {}; it was the idle job heard from longest ago ({} s ago; its reports stay in the "
          + "store)", oldest.id(), why, Math.max(0, nowNanos - oldestSince) / 1_000_000_000L);
    }
    return true;
  }

  /** The bytes of what clients made the daemon hold, and the refusals of more. */
  public StateBudget budget() {
    return budget;
  }

  /** Idle jobs forgotten since start to make room for new ones at the job limit, or for the state of others. */
  public long evictions() {
    return evictions.get();
  }

  public Optional<Job> find(String jobId) {
    return Optional.ofNullable(jobs.get(jobId));
  }

  public Collection<Job> all() {
    return List.copyOf(jobs.values());
  }

  /** Jobs whose node context waits for their first rank. */
  public int jobsAwaitingContext() {
    return earlyContext.size();
  }
}
