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
    /** Whether some collective record is retired with no completion (gloo's failed ops; see Completion). */
    boolean retiredUnknown;
    /** Oldest collective seq held in the ring; older seqs were overwritten. */
    long oldestHeld = Long.MAX_VALUE;
    long oldestHeldP2p = Long.MAX_VALUE;
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
      CollectiveRecord r = records.get(i);
      Track t = tracksByName.get(r.getProcessGroup());
      trackOf[i] = t;
      if (t != null) {
        (r.getIsP2P() ? t.p2p : t.collectives).expect();
      }
    }
    boolean starts = false;
    CollectiveRecord oldest = null;
    CollectiveRecord last = null;
    for (int i = 0; i < trackOf.length; i++) {
      CollectiveRecord r = records.get(i);
      last = r;
      Track t = trackOf[i];
      if (t == null) {
        continue;
      }
      if (r.getState() == CollectiveState.STARTED || r.getTimeStartedNs() > 0) {
        starts = true;
      }
      boolean ended = Completion.ended(r);
      if (t.lastRecord != null && Completion.ended(t.lastRecord) && t.lastRecord.getOpId() > 0
          && r.getOpId() > t.lastRecord.getOpId() + 1) {
        t.unrecordedOps += r.getOpId() - t.lastRecord.getOpId() - 1;
      }
      t.lastRecord = r;
      if (r.getIsP2P()) {
        t.p2p.add(r.getP2PSeq(), r);
        t.p2pEnqueued = Math.max(t.p2pEnqueued, r.getP2PSeq());
        t.oldestHeldP2p = Math.min(t.oldestHeldP2p, r.getP2PSeq());
        if (ended) {
          t.p2pCompleted = Math.max(t.p2pCompleted, r.getP2PSeq());
        }
      } else {
        t.collectives.add(r.getCollectiveSeq(), r);
        t.retiredUnknown |= Completion.retiredUnknown(r);
        t.enqueued = Math.max(t.enqueued, r.getCollectiveSeq());
        t.oldestHeld = Math.min(t.oldestHeld, r.getCollectiveSeq());
        if (ended) {
          t.completed = Math.max(t.completed, r.getCollectiveSeq());
        } else if (r.getState() == CollectiveState.STARTED) {
          t.started = Math.max(t.started, r.getCollectiveSeq());
        }
      }
      if (ended) {
        t.lastCompletionNs = Math.max(t.lastCompletionNs, r.getTimeCompletedNs());
      } else if (oldest == null || isBefore(r, oldest)) {
        oldest = r;
      }
    }
    for (Track t : tracks.values()) {
      t.collectives.seal();
      t.p2p.seal();
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
      t.p2pEnqueued = Math.max(t.p2pEnqueued, p.getLastEnqueuedP2PSeq());
      t.p2pCompleted = Math.max(t.p2pCompleted, p.getLastCompletedP2PSeq());
      t.lastProgressNs = Math.max(t.lastProgressNs, p.getLastProgressNs());
      if (p.getLastStartedSeq() >= 0) {
        starts = true;
      }
    }
    this.recordsStarts = starts;
    this.oldestIncomplete = oldest;
    this.newest = last;
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
