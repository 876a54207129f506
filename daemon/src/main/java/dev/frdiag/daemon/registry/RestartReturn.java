package dev.frdiag.daemon.registry;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.proto.v1.RankIdentity;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A job's ranks that were connected when the daemon stopped, awaited back until a deadline (DIAGNOSIS.md §3, "After a
 * restart"): while they are, no verdict is made on the job. Not thread-safe: the job's lock guards it and the ranks'
 * states it reads.
 */
final class RestartReturn {
  private static final Logger log = LoggerFactory.getLogger(RestartReturn.class);

  private final String jobId;
  @GuardedBy("the job's lock")
  private final Ranks ranks;
  /** Until when (daemon monotonic time) the ranks may come back; 0 when none is awaited. */
  @GuardedBy("the job's lock")
  private long untilNanos;

  RestartReturn(String jobId, Ranks ranks) {
    this.jobId = jobId;
    this.ranks = ranks;
  }

  /**
   * Awaits the ranks {@code identities} name back until {@code deadlineNanos}. A rank that cannot be held (the job's or
   * the daemon's state limit) is left out.
   */
  void expect(List<RankIdentity> identities, long deadlineNanos) {
    for (RankIdentity identity : identities) {
      try {
        ranks.expect(identity);
      } catch (LimitExceededException e) {
        log.warn("job {}: rank {} connected before the restart is not expected back: {}", jobId,
            identity.getGlobalRank(), e.getMessage());
      }
    }
    untilNanos = ranks.awaited().isEmpty() ? 0 : deadlineNanos;
  }

  /**
   * Whether ranks are still awaited at {@code nowNanos}. Once their time has passed, those not back are lost (or, when
   * none came back at all, the job ended while the daemon was away and they finished).
   */
  boolean awaiting(long nowNanos) {
    if (untilNanos == 0) {
      return false;
    }
    List<Integer> missing = ranks.awaited();
    if (missing.isEmpty()) {
      untilNanos = 0;
      log.info("job {}: every rank connected before the restart is back", jobId);
      return false;
    }
    if (nowNanos - untilNanos < 0) {
      return true;
    }
    boolean ended = !ranks.anyConnectedSinceStart();
    ranks.notBack(ended, nowNanos);
    untilNanos = 0;
    if (ended) {
      log.info("job {}: none of its {} ranks connected before the restart came back; it ended while the daemon was "
          + "away", jobId, missing.size());
    } else {
      log.warn("job {}: ranks {} connected before the restart did not come back in time; taken for lost", jobId,
          dev.frdiag.analysis.Ranks.compact(missing));
    }
    return false;
  }
}
