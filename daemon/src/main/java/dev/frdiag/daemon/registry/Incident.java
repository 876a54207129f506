package dev.frdiag.daemon.registry;

import dev.frdiag.analysis.Liveness;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.report.Report;
import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * One job's incident lifecycle: what opens an incident, what closes it, and the on-demand diagnosis running. A job
 * has one incident open at a time (DIAGNOSIS.md §3). Not thread-safe: the job's lock guards it and the ranks' states
 * it is handed.
 */
final class Incident {
  private boolean open;
  private Report.Trigger trigger;
  /** The groups that had stalled when the open incident opened (a STALL's); empty for other triggers. */
  private Set<Object> groups = Set.of();
  /** The groups {@link #trigger} last found stalled. */
  private Set<Object> stalledAtLastCheck = Set.of();
  private long quietAtLastCheckNanos = -1;
  private long reportedNanos;
  private CompletableFuture<Report> onDemand;
  private long lastOnDemandNanos;

  boolean isOpen() {
    return open;
  }

  /**
   * Why the job needs a diagnosis now, or null: a process group with outstanding work whose members' completed seq
   * has not advanced for {@code stallTimeout}, a rank lost for at least {@code lostGrace}, or a rank that reported a
   * timeout or error. With the daemon's intake {@code intakeLagNanos} behind, a rank counts as silent only when it
   * was silent for the heartbeat timeout before {@code nowNanos - intakeLagNanos}, the moment up to which the daemon
   * has read every message (DIAGNOSIS.md §3, "A daemon behind its intake").
   */
  Report.Trigger trigger(Collection<RankState> ranks, long nowNanos, long intakeLagNanos, Duration stallTimeout,
      Duration heartbeatTimeout, Duration lostGrace) {
    if (open) {
      return null;
    }
    long readUntil = nowNanos - Math.max(0, intakeLagNanos);
    for (RankState r : ranks) {
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
    quietAtLastCheckNanos = StallCheck.longestQuietNanos(ranks, nowNanos);
    if (quietAtLastCheckNanos < stallTimeout.toNanos()) {
      return null;
    }
    stalledAtLastCheck = StallCheck.stalledGroups(ranks, nowNanos, stallTimeout.toNanos());
    return Report.Trigger.STALL;
  }

  /**
   * As of the last {@link #trigger} that looked at the groups, how long the quietest group with outstanding work had
   * gone without progress; -1 when none had, or an incident opened or closed since.
   */
  long quietAtLastCheckNanos() {
    return quietAtLastCheckNanos;
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

  /** Opens an incident for {@code trigger}; the ranks' events and losses that led to it are part of it. */
  void open(Report.Trigger trigger, Collection<RankState> ranks) {
    open = true;
    quietAtLastCheckNanos = -1;
    this.trigger = trigger;
    groups = trigger == Report.Trigger.STALL ? stalledAtLastCheck : Set.of();
    reportedNanos = 0;
    ranks.forEach(RankState::incidentOpened);
  }

  /** The open incident's report is written. */
  void reported(long nowNanos) {
    reportedNanos = nowNanos;
  }

  /**
   * Closes an incident that a rank event or a lost rank opened, once its report is written and {@code quiet} has
   * passed: ranks fed by the node agent report no progress, so "progress resumed" would never close it, and the
   * job's next hang would go unreported. Events during the quiet period belong to the same hang.
   */
  void closeAfterReport(Collection<RankState> ranks, long nowNanos, Duration quiet) {
    if (!open || trigger == Report.Trigger.STALL || reportedNanos == 0
        || nowNanos - reportedNanos < quiet.toNanos()) {
      return;
    }
    open = false;
    quietAtLastCheckNanos = -1;
    ranks.forEach(RankState::eventsHandled);
  }

  /**
   * Closes the incident once the job recovered (DIAGNOSIS.md §3, "When an incident closes"): no rank is lost, and
   * every group that had stalled when a stall opened it has advanced again since {@code sinceNanos} (for other
   * triggers, any group has).
   */
  void closeIfRecovered(Collection<RankState> ranks, long sinceNanos) {
    if (!open) {
      return;
    }
    boolean anyLost = ranks.stream().anyMatch(r -> r.liveness() == Liveness.LOST);
    // Not any group: at 16,384 ranks, a daemon behind its intake took in heartbeats sent before the hang, whose
    // advances of groups the hang had not yet reached closed the incident, and the next pass opened another
    // (five stall reports of one hang in 13 s).
    boolean advanced = groups.isEmpty()
        ? ranks.stream().anyMatch(r -> r.liveness() == Liveness.ALIVE && r.advancedSince(sinceNanos))
        : groups.stream().allMatch(g -> StallCheck.advancedSince(ranks, g, sinceNanos));
    if (!anyLost && advanced) {
      open = false;
      quietAtLastCheckNanos = -1;
    }
  }

  /**
   * The on-demand diagnosis running for job {@code jobId}, or {@code candidate} when none runs and one may start now:
   * {@code admission} has passed and the last one started at least {@code interval} ago.
   *
   * @throws LimitExceededException when the last one started less than {@code interval} ago, or admission refused
   */
  CompletableFuture<Report> joinOrClaimOnDemand(String jobId, long nowNanos, Duration interval,
      CompletableFuture<Report> candidate, Runnable admission) {
    if (onDemand != null && !onDemand.isDone()) {
      return onDemand;
    }
    long since = nowNanos - lastOnDemandNanos;
    if (onDemand != null && since < interval.toNanos()) {
      throw new LimitExceededException("job " + jobId + " was diagnosed on demand " + since / 1_000_000
          + " ms ago; ask again in " + (interval.toNanos() - since + 999_999) / 1_000_000 + " ms");
    }
    admission.run();
    onDemand = candidate;
    lastOnDemandNanos = nowNanos;
    return candidate;
  }
}
