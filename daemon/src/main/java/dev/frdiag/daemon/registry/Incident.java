package dev.frdiag.daemon.registry;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.analysis.Liveness;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.report.Report;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongPredicate;
import java.util.function.LongSupplier;

/**
 * One job's incident, its whole life in one place (DIAGNOSIS.md §3): watched as a stall nears (its evidence built
 * ahead once per approach), opened, its snapshots gathered ({@link Gather}), analysed, reported, closed when the job
 * recovers or goes quiet after its report, and expired with its job. A job has one incident open at a time; the
 * on-demand diagnosis running for it, and its gather, live here too. Thread-safe: every method holds the job's lock,
 * which also guards the ranks' states it reads, so the watchdog's scan, the investigator and the ranks' streams see
 * one state.
 */
public final class Incident {
  /** Where an incident stands. */
  public enum Phase {
    /** No incident open: the watchdog is watching the job. */
    QUIET,
    /** Opened; no snapshot asked yet. */
    OPEN,
    /** Its snapshots are being gathered. */
    GATHERING,
    /** Gathered; the analysis runs. */
    ANALYSING,
    /** Its report is written; it closes once the job recovers, or goes quiet. */
    REPORTED,
    /** The job was forgotten (idle past the expiry); nothing more happens to it. */
    EXPIRED
  }

  private final String jobId;
  private final Object lock;
  @GuardedBy("lock")
  private final Ranks ranks;
  /** Whether ranks connected before a restart are still awaited at a time: no incident opens until then. */
  @GuardedBy("lock")
  private final LongPredicate awaitingReturn;
  private final OnDemandSlots onDemandSlots;

  @GuardedBy("lock")
  private boolean open;
  @GuardedBy("lock")
  private boolean expired;
  @GuardedBy("lock")
  private Report.Trigger trigger;
  @GuardedBy("lock")
  private long openedAtNanos;
  /** The groups that had stalled when the open incident opened (a STALL's); empty for other triggers. */
  @GuardedBy("lock")
  private Set<Object> groups = Set.of();
  /** The groups the last {@link #openIfDue} found stalled. */
  @GuardedBy("lock")
  private Set<Object> stalledAtLastCheck = Set.of();
  @GuardedBy("lock")
  private long quietAtLastCheckNanos = -1;
  /** Whether the job's evidence was built ahead in its current approach to the stall timeout. */
  @GuardedBy("lock")
  private boolean preparedAhead;
  /** Whether the open incident's own gather has ended. */
  @GuardedBy("lock")
  private boolean gathered;
  @GuardedBy("lock")
  private long reportedNanos;
  /** The open incident's report, once written; null before, or when its analysis failed. */
  @GuardedBy("lock")
  private String reportId;
  /**
   * The gathers running for the job: the open incident's, and an on-demand diagnosis's. Written under the lock, read
   * without it: a rank's dump reply finds its gather without waiting behind the job's heartbeats.
   */
  private volatile List<Gather> gathers = List.of();
  @GuardedBy("lock")
  private CompletableFuture<Report> onDemand;
  @GuardedBy("lock")
  private long lastOnDemandNanos;

  Incident(String jobId, Object lock, Ranks ranks, LongPredicate awaitingReturn, OnDemandSlots onDemandSlots) {
    this.jobId = jobId;
    this.lock = lock;
    this.ranks = ranks;
    this.awaitingReturn = awaitingReturn;
    this.onDemandSlots = onDemandSlots;
  }

  /** Where the job's incident stands now. */
  public Phase phase() {
    synchronized (lock) {
      if (expired) {
        return Phase.EXPIRED;
      }
      if (!open) {
        return Phase.QUIET;
      }
      if (reportedNanos != 0) {
        return Phase.REPORTED;
      }
      if (gathered) {
        return Phase.ANALYSING;
      }
      return gathers.stream().anyMatch(Gather::ofIncident) ? Phase.GATHERING : Phase.OPEN;
    }
  }

  /** Whether an incident is open (from its opening until it closes). */
  public boolean isOpen() {
    synchronized (lock) {
      return open;
    }
  }

  /** What opened the open incident; null when none is open. */
  public Report.Trigger trigger() {
    synchronized (lock) {
      return open ? trigger : null;
    }
  }

  /**
   * Opens an incident when the job needs a diagnosis now, and returns why; null when it does not, one is open
   * already, or ranks connected before a restart are still awaited. A job needs one for a process group with
   * outstanding work whose members' completed seq has not advanced for {@code stallTimeout}, a rank lost for at
   * least {@code lostGrace}, or a rank that reported a timeout or error. With the daemon's intake
   * {@code intakeLagNanos} behind, a rank counts as silent only when it was silent for the heartbeat timeout before
   * {@code nowNanos - intakeLagNanos}, the moment up to which the daemon has read every message (DIAGNOSIS.md §3,
   * "A daemon behind its intake"). The ranks' events and losses that led to it are part of it.
   */
  public Report.Trigger openIfDue(long nowNanos, long intakeLagNanos, Duration stallTimeout,
      Duration heartbeatTimeout, Duration lostGrace) {
    synchronized (lock) {
      if (open || expired || awaitingReturn.test(nowNanos)) {
        return null;
      }
      Report.Trigger due = due(ranks.all(), nowNanos, intakeLagNanos, stallTimeout, heartbeatTimeout, lostGrace);
      if (due != null) {
        open(due, nowNanos);
      }
      return due;
    }
  }

  @GuardedBy("lock")
  private Report.Trigger due(Collection<RankState> all, long nowNanos, long intakeLagNanos, Duration stallTimeout,
      Duration heartbeatTimeout, Duration lostGrace) {
    long readUntil = nowNanos - Math.max(0, intakeLagNanos);
    for (RankState r : all) {
      r.silenceCheck(readUntil, heartbeatTimeout, nowNanos);
      // A stream that ended is a lost rank. Silence opens an incident only after the grace as well, and the
      // analysis does not take it for death: a starved process is often just slow, and a host that vanished
      // without closing its connection is found by the transport's keepalive, which then ends its streams.
      // A loss an incident already covered does not open another: a job killed without goodbyes is one
      // incident, not one per stall timeout.
      Report.Trigger loss = r.lossTrigger(nowNanos, lostGrace);
      if (loss != null) {
        return loss;
      }
      RankEvent.Kind event = r.unhandledEvent();
      if (event != null) {
        return triggerOf(event);
      }
    }
    quietAtLastCheckNanos = StallCheck.longestQuietNanos(all, nowNanos);
    if (quietAtLastCheckNanos < stallTimeout.toNanos()) {
      return null;
    }
    stalledAtLastCheck = StallCheck.stalledGroups(all, nowNanos, stallTimeout.toNanos());
    return Report.Trigger.STALL;
  }

  /** What a rank's event opens an incident as; the wire layer lets no other kind of event in. */
  static Report.Trigger triggerOf(RankEvent.Kind kind) {
    return switch (kind) {
      case WATCHDOG_TIMEOUT -> Report.Trigger.WATCHDOG_TIMEOUT;
      // The checker's verdict is about the collectives the ranks issued: an error of the communication.
      case COMM_ERROR, COLLECTIVE_MISMATCH -> Report.Trigger.COMM_ERROR;
      case CUDA_ERROR -> Report.Trigger.CUDA_ERROR;
      case WATCHDOG_STUCK -> Report.Trigger.WATCHDOG_STUCK;
      case KIND_UNSPECIFIED, UNRECOGNIZED -> throw new IllegalArgumentException("rank event of kind " + kind);
    };
  }

  /** Opens an incident for {@code why} at {@code nowNanos}, whatever the ranks' state says. */
  public void open(Report.Trigger why, long nowNanos) {
    synchronized (lock) {
      open = true;
      trigger = why;
      openedAtNanos = nowNanos;
      groups = why == Report.Trigger.STALL ? stalledAtLastCheck : Set.of();
      quietAtLastCheckNanos = -1;
      preparedAhead = false;
      gathered = false;
      reportedNanos = 0;
      ranks.all().forEach(RankState::incidentOpened);
    }
  }

  /**
   * As of the last {@link #openIfDue} that looked at the groups, how long the quietest group with outstanding work
   * had gone without progress; -1 when none had, or an incident opened or closed since.
   */
  public long quietAtLastCheckNanos() {
    synchronized (lock) {
      return quietAtLastCheckNanos;
    }
  }

  /**
   * Whether the job's evidence is to be built ahead now (DIAGNOSIS.md §3, "Evidence built ahead"): true once per
   * approach to the stall timeout, the first time {@code near} is said; an approach ends when {@code near} is not.
   */
  public boolean prepareAhead(boolean near) {
    synchronized (lock) {
      if (!near || open) {
        preparedAhead = false;
        return false;
      }
      if (preparedAhead) {
        return false;
      }
      preparedAhead = true;
      return true;
    }
  }

  /**
   * Starts gathering the snapshots {@code request} asks for, the windows of {@code standIns} standing for theirs.
   * The gather is the open incident's own when {@code ofIncident}, else an on-demand diagnosis's. From now until
   * {@link #endGather}, replies to the request reach it ({@link Job#dumpReply}) and ranks that open a stream are
   * asked on it ({@link Job#attach}); {@code nanoTime} times its replies, for the quorum.
   */
  public Gather startGather(DumpRequest request, Set<Integer> standIns, boolean ofIncident, LongSupplier nanoTime) {
    synchronized (lock) {
      Gather g = new Gather(request, standIns, ofIncident && open, nanoTime);
      List<Gather> now = new ArrayList<>(gathers);
      now.add(g);
      gathers = List.copyOf(now);
      return g;
    }
  }

  /** Ends {@code gather}: replies to its request are turned away from now on. */
  public void endGather(Gather gather) {
    synchronized (lock) {
      gather.finish();
      List<Gather> now = new ArrayList<>(gathers);
      if (now.remove(gather)) {
        gathers = List.copyOf(now);
        if (gather.ofIncident() && open) {
          gathered = true;
        }
      }
    }
  }

  /** The gather still collecting replies to request {@code requestId}; null when none is. Takes no lock. */
  Gather gatherOf(long requestId) {
    for (Gather g : gathers) {
      if (g.request().getRequestId() == requestId) {
        return g;
      }
    }
    return null;
  }

  /** The gathers running now. Takes no lock. */
  List<Gather> gathers() {
    return gathers;
  }

  /**
   * The open incident's investigation is over at {@code nowNanos}: its report {@code reportId} written, or its
   * analysis failed ({@code reportId} null).
   */
  public void reported(long nowNanos, String reportId) {
    synchronized (lock) {
      if (open) {
        reportedNanos = nowNanos;
        this.reportId = reportId;
      }
    }
  }

  /**
   * How an incident ended: {@code recovered} when the job moved again by itself (no rank lost, none restarted), else
   * it went quiet after its report; {@code reportId} its report, null when none was written.
   */
  public record Closed(boolean recovered, String reportId) {}

  /**
   * Closes the open incident when it is over, and says whether it did: once the job recovered (DIAGNOSIS.md §3, "When
   * an incident closes": no rank is lost, and every group that had stalled when a stall opened it has advanced again
   * since it opened; for other triggers, any group has), or, for an incident a rank event or a lost rank opened, once
   * its report is written and {@code quiet} has passed: ranks fed by the node agent report no progress, so
   * "progress resumed" would never close it, and the job's next hang would go unreported. Events during the quiet
   * period belong to the same hang. A job that moved again with none of its ranks restarted recovered by itself
   * (DIAGNOSIS.md §3, "A stall that ends by itself"); one whose processes were restarted did not.
   *
   * @return how it ended, or null while it goes on
   */
  public Closed closeIfOver(long nowNanos, Duration quiet) {
    synchronized (lock) {
      if (!open) {
        return null;
      }
      Collection<RankState> all = ranks.all();
      boolean anyLost = all.stream().anyMatch(r -> r.liveness() == Liveness.LOST);
      // Not any group: at 16,384 ranks, a daemon behind its intake takes in heartbeats sent before the hang, whose
      // advances of groups the hang has not reached yet would close the incident and let the next pass open another.
      boolean advanced = groups.isEmpty()
          ? all.stream().anyMatch(r -> r.liveness() == Liveness.ALIVE && r.advancedSince(openedAtNanos))
          : groups.stream().allMatch(g -> StallCheck.advancedSince(all, g, openedAtNanos));
      String report = reportId;
      if (!anyLost && advanced) {
        boolean restarted = all.stream().anyMatch(r -> r.restartedSince(openedAtNanos));
        close();
        return new Closed(!restarted, report);
      }
      if (trigger != Report.Trigger.STALL && reportedNanos != 0 && nowNanos - reportedNanos >= quiet.toNanos()) {
        close();
        all.forEach(RankState::eventsHandled);
        return new Closed(false, report);
      }
      return null;
    }
  }

  @GuardedBy("lock")
  private void close() {
    open = false;
    reportId = null;
    quietAtLastCheckNanos = -1;
  }

  /**
   * The on-demand diagnosis running for the job, or {@code candidate} when none runs and one may start now: the
   * last one started at least {@code interval} ago, and the daemon runs fewer than its limit of them. A claimed
   * candidate holds one of the daemon's on-demand slots until it completes.
   *
   * @throws LimitExceededException when the last one started less than {@code interval} ago, or the daemon runs its
   *     limit of on-demand diagnoses
   */
  public CompletableFuture<Report> joinOrClaimOnDemand(long nowNanos, Duration interval,
      CompletableFuture<Report> candidate) {
    synchronized (lock) {
      if (onDemand != null && !onDemand.isDone()) {
        return onDemand;
      }
      long since = nowNanos - lastOnDemandNanos;
      if (onDemand != null && since < interval.toNanos()) {
        throw new LimitExceededException("job " + jobId + " was diagnosed on demand " + since / 1_000_000
            + " ms ago; ask again in " + (interval.toNanos() - since + 999_999) / 1_000_000 + " ms");
      }
      onDemandSlots.claim();
      onDemand = candidate;
      lastOnDemandNanos = nowNanos;
    }
    candidate.whenComplete((report, error) -> onDemandSlots.release());
    return candidate;
  }

  /** The job was forgotten: nothing more happens to its incident. */
  void expire() {
    synchronized (lock) {
      expired = true;
      open = false;
    }
  }
}
