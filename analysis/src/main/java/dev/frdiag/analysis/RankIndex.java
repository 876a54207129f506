package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** One rank's evidence indexed for lookups by (process group, seq). */
final class RankIndex {
  final RankEvidence evidence;
  /** Group name on this rank → identity. */
  final Map<String, GroupKey> groupsByName = new HashMap<>();
  /** Group identity → this rank's track in it. */
  final Map<GroupKey, Track> tracks = new HashMap<>();
  /** True when this rank's data shows device start events (so "issued, not started" is meaningful). */
  final boolean recordsStarts;
  /** The oldest op this rank issued and has not completed, or null. */
  final CollectiveRecord oldestIncomplete;
  final CollectiveRecord newest;

  /** A rank's view of one process group. */
  static final class Track {
    final RecordsBySeq collectives = new RecordsBySeq();
    final RecordsBySeq p2p = new RecordsBySeq();
    long enqueued = -1;
    long started = -1;
    long completed = -1;
    /** The last collective the rank's own status (pg_status) reports completed; -1 when it reports none. */
    long reportedCompleted = -1;
    long p2pEnqueued = -1;
    long p2pCompleted = -1;
    long lastProgressNs;
    long lastCompletionNs;
    /**
     * Ops the group issued that no record shows: op_id gaps after an ended record (op_id counts every op of the
     * group, P2P included, and gloo records no send/recv). Counted only after an ended record, as a dump of only
     * the active entries leaves out completed ones.
     */
    long unrecordedOps;
    private CollectiveRecord lastRecord;
    /** The oldest record of this group that has not ended, by {@link RankIndex#isBefore}; null when none. */
    private CollectiveRecord oldestIncomplete;
    /** Its place in the rank's records: of two that {@code isBefore} cannot order, the earlier one is older. */
    private int oldestIncompleteAt;
    /** Whether a record shows the device starting it: a STARTED state or a start time. */
    private boolean recordsStarts;
    /** Whether some collective record is retired with no completion (gloo's failed ops; see Completion). */
    boolean retiredUnknown;
    /** Oldest collective seq held in the ring; older seqs were overwritten. */
    long oldestHeld = Long.MAX_VALUE;
    long oldestHeldP2p = Long.MAX_VALUE;

    /**
     * Whether {@code r}, a record of this track, left the work list above the last collective the rank's status
     * reports completed: on gloo, a collective that failed (Completion).
     */
    boolean retiredFailed(CollectiveRecord r) {
      return Completion.retiredUnknown(r) && reportedCompleted >= 0 && r.getCollectiveSeq() > reportedCompleted;
    }

    /** Whether this track's oldest incomplete record is older than {@code other}'s; both hold one. */
    boolean holdsOlderThan(Track other) {
      CollectiveRecord mine = oldestIncomplete;
      CollectiveRecord theirs = other.oldestIncomplete;
      return isBefore(mine, theirs) || !isBefore(theirs, mine) && oldestIncompleteAt < other.oldestIncompleteAt;
    }

    /**
     * The track of {@code r} among {@code tracksByName}, told to expect it; null for a record of a group the rank
     * does not list. Per record, as {@link #take} is.
     */
    static Track expect(Map<String, Track> tracksByName, CollectiveRecord r) {
      Track t = tracksByName.get(r.getProcessGroup());
      if (t != null) {
        (r.getIsP2P() ? t.p2p : t.collectives).expect();
      }
      return t;
    }

    /**
     * Takes the rank's next record of this group, in issue order; {@code at} is its place among the rank's records.
     * A method of its own, called once per record: a rank's loop over its records runs a few dozen times per
     * analysis, too few for the compiler to take it before it is done, and this is compiled after a few hundred
     * records; the loop itself does nothing else.
     */
    void take(CollectiveRecord r, int at) {
      boolean ended = Completion.ended(r);
      recordsStarts |= r.getState() == CollectiveState.STARTED || r.getTimeStartedNs() > 0;
      if (!ended && (oldestIncomplete == null || isBefore(r, oldestIncomplete))) {
        oldestIncomplete = r;
        oldestIncompleteAt = at;
      }
      if (lastRecord != null && Completion.ended(lastRecord) && lastRecord.getOpId() > 0
          && r.getOpId() > lastRecord.getOpId() + 1) {
        unrecordedOps += r.getOpId() - lastRecord.getOpId() - 1;
      }
      lastRecord = r;
      if (r.getIsP2P()) {
        p2p.add(r.getP2PSeq(), r);
        p2pEnqueued = Math.max(p2pEnqueued, r.getP2PSeq());
        oldestHeldP2p = Math.min(oldestHeldP2p, r.getP2PSeq());
        if (ended) {
          p2pCompleted = Math.max(p2pCompleted, r.getP2PSeq());
        }
      } else {
        collectives.add(r.getCollectiveSeq(), r);
        retiredUnknown |= Completion.retiredUnknown(r);
        enqueued = Math.max(enqueued, r.getCollectiveSeq());
        oldestHeld = Math.min(oldestHeld, r.getCollectiveSeq());
        if (ended) {
          completed = Math.max(completed, r.getCollectiveSeq());
        } else if (r.getState() == CollectiveState.STARTED) {
          started = Math.max(started, r.getCollectiveSeq());
        }
      }
      if (ended) {
        lastCompletionNs = Math.max(lastCompletionNs, r.getTimeCompletedNs());
      }
    }
  }

  /** Indexes {@code evidence}, taking each group's shared key object from {@code keys} (by the group's identity). */
  RankIndex(RankEvidence evidence, Map<ProcessGroup, GroupKey> keys) {
    this.evidence = evidence;
    // One lookup per record, not two (name to key, key to track): there are a million records at 16,384 ranks.
    Map<String, Track> tracksByName = new HashMap<>();
    for (ProcessGroup g : evidence.groups()) {
      GroupKey key = keys.get(g);
      if (key == null) {
        key = GroupKey.of(g);
      }
      groupsByName.put(g.getName(), key);
      Track t = new Track();
      tracks.put(key, t);
      tracksByName.put(g.getName(), t);
    }
    List<CollectiveRecord> records = evidence.records();
    // Each record's track found once, and counted, so that each track's arrays are allocated once at their size.
    Track[] trackOf = new Track[records.size()];
    for (int i = 0; i < trackOf.length; i++) {
      trackOf[i] = Track.expect(tracksByName, records.get(i));
    }
    for (int i = 0; i < trackOf.length; i++) {
      if (trackOf[i] != null) {
        trackOf[i].take(records.get(i), i);
      }
    }
    boolean starts = false;
    Track oldest = null;
    for (Track t : tracks.values()) {
      t.collectives.seal();
      t.p2p.seal();
      starts |= t.recordsStarts;
      if (t.oldestIncomplete != null && (oldest == null || t.holdsOlderThan(oldest))) {
        oldest = t;
      }
    }
    for (ProcessGroupProgress p : evidence.progress()) {
      GroupKey key = groupsByName.get(p.getProcessGroup());
      if (key == null) {
        continue;
      }
      Track t = tracks.get(key);
      t.enqueued = Math.max(t.enqueued, p.getLastEnqueuedSeq());
      t.started = Math.max(t.started, p.getLastStartedSeq());
      t.completed = Math.max(t.completed, p.getLastCompletedSeq());
      t.reportedCompleted = Math.max(t.reportedCompleted, p.getLastCompletedSeq());
      t.p2pEnqueued = Math.max(t.p2pEnqueued, p.getLastEnqueuedP2PSeq());
      t.p2pCompleted = Math.max(t.p2pCompleted, p.getLastCompletedP2PSeq());
      t.lastProgressNs = Math.max(t.lastProgressNs, p.getLastProgressNs());
      if (p.getLastStartedSeq() >= 0) {
        starts = true;
      }
    }
    this.recordsStarts = starts;
    this.oldestIncomplete = oldest == null ? null : oldest.oldestIncomplete;
    this.newest = records.isEmpty() ? null : records.get(records.size() - 1);
  }

  int rank() {
    return evidence.rank();
  }

  /**
   * Order of issue on one rank: the per-process record id, which is the true issue order (a wall clock can step
   * backwards); creation time only when the ids are equal.
   */
  static boolean isBefore(CollectiveRecord a, CollectiveRecord b) {
    if (a.getRecordId() != b.getRecordId()) {
      return a.getRecordId() < b.getRecordId();
    }
    return a.getTimeCreatedNs() < b.getTimeCreatedNs();
  }
}
