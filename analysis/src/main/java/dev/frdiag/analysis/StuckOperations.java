package dev.frdiag.analysis;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankEvent;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The operations of a job that have outstanding work and make no progress: per process group the first
 * outstanding collective and P2P op, plus those the later phases find members blocked in. Collectives are matched
 * across ranks by (process group identity, collective_seq), P2P ops by (process group identity, p2p_seq), never by
 * record id.
 */
final class StuckOperations {
  private final JobIndex index;
  private final Rhythm rhythm;
  /** In the order found; later phases add the operations members are blocked in. */
  private final Map<StuckOp.Key, StuckOp> ops = new LinkedHashMap<>();
  /** Which members' evidence predates a completion their peers show. */
  private final ConsistentCut cut;

  private StuckOperations(JobIndex index, Rhythm rhythm) {
    this.index = index;
    this.rhythm = rhythm;
    this.cut = new ConsistentCut(index, rhythm);
  }

  /** The first outstanding operations of every group that stalled for the job's stall threshold. */
  static StuckOperations find(JobIndex index, Rhythm rhythm) {
    StuckOperations found = new StuckOperations(index, rhythm);
    for (GroupKey g : index.groups.keySet()) {
      found.findStuck(g);
    }
    return found;
  }

  /** The members whose evidence predates a completion their peers show, as evidence lines; at most a few. */
  List<Evidence> earlierCuts() {
    return cut.earlierCuts();
  }

  /** {@link ConsistentCut#cutShort}. */
  boolean cutShort(GroupKey g, long seq) {
    return cut.cutShort(g, seq);
  }

  /** Every operation found so far, in the order found. */
  Collection<StuckOp> all() {
    return Collections.unmodifiableCollection(ops.values());
  }

  boolean isEmpty() {
    return ops.isEmpty();
  }

  /** The operation (g, seq), found now if it was not yet. */
  StuckOp op(GroupKey g, long seq, boolean p2p) {
    return op(g, seq, p2p, -1);
  }

  /** The operation, found now if it was not yet; {@code owner} as in {@link StuckOp.Key}. */
  StuckOp op(GroupKey g, long seq, boolean p2p, int owner) {
    StuckOp.Key key = new StuckOp.Key(g, seq, p2p, owner);
    StuckOp existing = ops.get(key);
    if (existing != null) {
      return existing;
    }
    List<Integer> involved = index.members.get(g);
    if (owner >= 0) {
      List<CollectiveRecord> mine = index.recordsOf(owner, g, seq, true);
      int peer = mine.isEmpty() ? -1 : mine.get(0).getPeer();
      involved = peer < 0 || peer == owner ? List.of(owner) : List.of(Math.min(owner, peer), Math.max(owner, peer));
    }
    Map<Integer, MemberState> states = new TreeMap<>();
    CollectiveRecord sample = null;
    long firstCreatedNs = Long.MAX_VALUE;
    for (int member : involved) {
      states.put(member, owner >= 0 && member != owner ? counterpartState(member, g, owner)
          : stateOf(member, g, seq, p2p));
      for (CollectiveRecord r : recordsIn(key, member)) {
        if (sample == null || r.getCommsId() != 0 && sample.getCommsId() == 0) {
          sample = r;
        }
        // A record retired with no completion, in an op still stuck, was waited on until it failed.
        if (!Completion.ended(r) || Completion.retiredUnknown(r)) {
          firstCreatedNs = Math.min(firstCreatedNs, r.getTimeCreatedNs());
        }
      }
    }
    for (Map.Entry<Integer, MemberState> e : states.entrySet()) {
      if (e.getValue() == MemberState.ISSUED && windowBehind(e.getKey(), key, firstCreatedNs)) {
        e.setValue(MemberState.UNKNOWN);
      }
    }
    StuckOp op = new StuckOp(key, states, sample, firstCreatedNs, ref(key, states, sample));
    ops.put(key, op);
    return op;
  }

  /**
   * Whether {@code rank} is heard from but did not answer, and its window was not vouched for (its last word that every
   * record had reached the daemon) at a time when its part of the op had already waited the stall threshold: then
   * its window's "issued, not started" may lack a start or completion the daemon has not read yet (DIAGNOSIS.md §4).
   */
  private boolean windowBehind(int rank, StuckOp.Key key, long firstCreatedNs) {
    RankIndex r = index.rank(rank);
    if (r == null || r.evidence.answered() || r.evidence.liveness() != Liveness.ALIVE) {
      return false;
    }
    long issued = Long.MAX_VALUE;
    for (CollectiveRecord rec : recordsIn(key, rank)) {
      if (!Completion.ended(rec) && rec.getTimeCreatedNs() > 0) {
        issued = Math.min(issued, rec.getTimeCreatedNs());
      }
    }
    issued = issued == Long.MAX_VALUE ? firstCreatedNs : issued;
    long currentAt = r.evidence.windowCurrentAtNs();
    return currentAt <= 0 || issued <= 0 || issued == Long.MAX_VALUE
        || currentAt - issued < index.job.stallThreshold().toNanos();
  }

  /** The records {@code rank} holds for {@code op}: for a pair operation's peer, its counterpart op. */
  List<CollectiveRecord> recordsIn(StuckOp op, int rank) {
    return recordsIn(op.key, rank);
  }

  private List<CollectiveRecord> recordsIn(StuckOp.Key k, int rank) {
    if (k.owner() < 0 || rank == k.owner()) {
      return index.recordsOf(rank, k.group(), k.seq(), k.p2p());
    }
    CollectiveRecord c = index.counterpart(rank, k.group(), k.owner());
    return c == null ? List.of() : List.of(c);
  }

  private void findStuck(GroupKey g) {
    JobEvidence job = index.job;
    java.util.TreeSet<Long> outstanding = new java.util.TreeSet<>();
    long firstP2p = Long.MAX_VALUE;
    List<long[]> pairOps = new ArrayList<>();
    long lastProgress = 0;
    for (int member : index.members.get(g)) {
      RankIndex.Track t = index.track(member, g);
      if (t == null) {
        continue;
      }
      lastProgress = Math.max(lastProgress, Math.max(t.lastProgressNs, t.lastCompletionNs));
      long mine = firstOutstanding(t.collectives, t.enqueued, t.completed);
      if (mine != Long.MAX_VALUE) {
        outstanding.add(mine);
      }
      long myP2p = firstOutstanding(t.p2p, t.p2pEnqueued, t.p2pCompleted);
      if (g.size() > 2) {
        if (myP2p != Long.MAX_VALUE && t.p2p.contains(myP2p)) {
          pairOps.add(new long[] {member, myP2p});
        }
      } else {
        firstP2p = Math.min(firstP2p, myP2p);
      }
    }
    if (!job.offline() && job.observedAtNs() - lastProgress < job.stallThreshold().toNanos()) {
      return;
    }
    long failed = firstFailed(g);
    if (failed != Long.MAX_VALUE) {
      outstanding.add(failed);
    }
    for (long seq : outstanding) {
      // A collective some member completed is not stuck: the members shown short of it were observed before
      // (each rank's dump is taken at its own moment). The group's stuck collective, if any, comes after.
      if (!cut.cutShort(g, seq)) {
        keepIfStalled(op(g, seq, false));
        break;
      }
    }
    if (firstP2p != Long.MAX_VALUE) {
      keepIfStalled(op(g, firstP2p, true));
    }
    for (long[] pair : pairOps) {
      keepIfStalled(op(g, pair[1], true, (int) pair[0]));
    }
  }

  /**
   * The lowest collective seq some member holds retired with no completion (gloo) while another member that
   * answered never issued it. A collective completes only once every member has joined it, so that retirement was
   * a failure (a timeout, a peer's lost connection), not a completion: the op is outstanding for the group.
   */
  private long firstFailed(GroupKey g) {
    long first = Long.MAX_VALUE;
    for (int member : index.members.get(g)) {
      RankIndex r = index.rank(member);
      RankIndex.Track t = r == null ? null : r.tracks.get(g);
      if (t == null || !t.retiredUnknown) {
        continue;
      }
      for (CollectiveRecord rec : t.collectives.all()) {
        // A gloo collective that failed raised in the rank's program, which issued nothing after it; one the rank
        // went on from completed, whoever's evidence is older.
        if (Completion.retiredUnknown(rec) && rec.getCollectiveSeq() < first && !wentOnFrom(r, rec)
            && failed(g, rec.getCollectiveSeq())) {
          first = rec.getCollectiveSeq();
        }
      }
    }
    return first;
  }

  /** Whether a member of {@code g} completed collective {@code seq} and issued something after it. */
  private boolean wentOnFromAnywhere(GroupKey g, long seq) {
    for (int member : index.members.get(g)) {
      RankIndex r = index.rank(member);
      if (r != null && ConsistentCut.completedBy(r, index.recordsOf(member, g, seq, false))) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code r} issued a record after {@code rec}. */
  static boolean wentOnFrom(RankIndex r, CollectiveRecord rec) {
    return r.newest != null && r.newest != rec && RankIndex.isBefore(rec, r.newest);
  }

  /**
   * Whether gloo collective (g, seq), retired on some member with nothing after it, failed rather than completed:
   * no member went on from it, and a member's status reports it not completed or a member never issued it. A
   * member observed before its first issue counts only when a member's wait in it ended, without completing, after
   * longer than a few of the group's intervals: the collective then ended in an error, not in the moment a dump was
   * taken.
   */
  boolean failed(GroupKey g, long seq) {
    if (wentOnFromAnywhere(g, seq)) {
      return false;
    }
    for (int member : index.members.get(g)) {
      RankIndex r = index.rank(member);
      RankIndex.Track t = r == null ? null : r.tracks.get(g);
      // The member's own status says it never completed what it retired: the failure is its own evidence.
      if (t != null && index.recordsOf(member, g, seq, false).stream().anyMatch(t::retiredFailed)) {
        return true;
      }
    }
    long within = Rhythm.WAIT_RHYTHMS * rhythm.interval(g);
    boolean endedAfterLongWait = false;
    for (int member : index.members.get(g)) {
      RankIndex r = index.rank(member);
      List<CollectiveRecord> recs = index.recordsOf(member, g, seq, false);
      if (r == null || recs.isEmpty() || !recs.stream().allMatch(Completion::retiredUnknown)
          || wentOnFrom(r, recs.get(recs.size() - 1))) {
        continue;
      }
      long issued = recs.get(0).getTimeCreatedNs();
      endedAfterLongWait |= within > 0 && issued > 0 && r.evidence.observedAtNs() - issued >= within;
    }
    return someoneNeverIssued(g, seq, endedAfterLongWait);
  }

  /**
   * Whether a member of {@code g} answered and never issued collective {@code seq} of it; one observed before anyone
   * issued it counts only with {@code countEarlier}.
   */
  private boolean someoneNeverIssued(GroupKey g, long seq, boolean countEarlier) {
    long firstIssued = Long.MAX_VALUE;
    for (int member : index.members.get(g)) {
      for (CollectiveRecord rec : index.recordsOf(member, g, seq, false)) {
        if (rec.getTimeCreatedNs() > 0) {
          firstIssued = Math.min(firstIssued, rec.getTimeCreatedNs());
        }
      }
    }
    for (int member : index.members.get(g)) {
      RankIndex r = index.rank(member);
      if (r != null && r.evidence.answered() && !r.evidence.isEmpty()) {
        RankIndex.Track t = r.tracks.get(g);
        // Observed before anyone issued it, a member that had not issued it says nothing of it (§3, "A consistent
        // cut").
        // A file is written a little after its content is taken: within one of the group's intervals of the first
        // issue, it cannot say which came first either (§3, "A consistent cut").
        boolean before = !countEarlier && r.evidence.observedAtNs() > 0 && firstIssued != Long.MAX_VALUE
            && r.evidence.observedAtNs() < firstIssued + rhythm.interval(g);
        if (!before && (t == null || t.enqueued < seq && t.collectives.get(seq) == null)) {
          return true;
        }
      }
    }
    return false;
  }

  private static long firstOutstanding(RecordsBySeq bySeq, long enqueued, long completed) {
    for (int i = bySeq.indexAbove(completed); i < bySeq.size(); i++) {
      if (!allEnded(bySeq.at(i))) {
        return bySeq.seq(i);
      }
    }
    // Issued but no longer (or never) in the ring: progress alone says it is outstanding.
    return enqueued > completed && !bySeq.contains(completed + 1) ? completed + 1 : Long.MAX_VALUE;
  }

  private static boolean allEnded(List<CollectiveRecord> recs) {
    for (CollectiveRecord r : recs) {
      if (!Completion.ended(r)) {
        return false;
      }
    }
    return true;
  }

  private void keepIfStalled(StuckOp op) {
    JobEvidence job = index.job;
    if (!job.offline() && op.firstCreatedNs != Long.MAX_VALUE
        && job.observedAtNs() - op.firstCreatedNs < job.stallThreshold().toNanos()) {
      ops.remove(op.key);
    }
  }

  /** Where a pair operation's peer is: waiting or issued when it has the counterpart outstanding, else not issued. */
  private MemberState counterpartState(int rank, GroupKey g, int owner) {
    RankIndex r = index.rank(rank);
    if (r == null || r.evidence.isEmpty() && !r.evidence.answered()) {
      return MemberState.UNKNOWN;
    }
    CollectiveRecord c = index.counterpart(rank, g, owner);
    if (c == null) {
      return MemberState.NOT_ISSUED;
    }
    return c.getState() == CollectiveState.STARTED || Completion.inside(c) ? MemberState.WAITING
        : MemberState.ISSUED;
  }

  /** Where {@code rank} is relative to operation (g, seq) by its own records and progress. */
  MemberState stateOf(int rank, GroupKey g, long seq, boolean p2p) {
    RankIndex r = index.rank(rank);
    if (r == null || r.evidence.isEmpty() && !r.evidence.answered()) {
      return MemberState.UNKNOWN;
    }
    RankIndex.Track t = r.tracks.get(g);
    if (t == null) {
      return r.evidence.isEmpty() ? MemberState.UNKNOWN : MemberState.NOT_ISSUED;
    }
    List<CollectiveRecord> recs = (p2p ? t.p2p : t.collectives).get(seq);
    long completed = p2p ? t.p2pCompleted : t.completed;
    long enqueued = p2p ? t.p2pEnqueued : t.enqueued;
    if (recs != null) {
      MemberState least = MemberState.DONE;
      boolean retiredUnknown = false;
      for (CollectiveRecord rec : recs) {
        retiredUnknown |= Completion.retiredUnknown(rec);
        MemberState own = Completion.ended(rec) ? MemberState.DONE
            : rec.getState() == CollectiveState.STARTED || Completion.inside(rec) ? MemberState.WAITING
            : MemberState.ISSUED;
        if (rank(own) < rank(least)) {
          least = own;
        }
      }
      if (retiredUnknown && !p2p && !wentOnFrom(r, recs.get(recs.size() - 1)) && failed(g, seq)) {
        // Retired while a member never joined: it failed, after this rank waited in it (firstFailed).
        return MemberState.WAITING;
      }
      // The progress counter was read when the heartbeat or dump was taken; a record copy may be older than that
      // (a re-sent record replaces it only once it arrives), so a counter past this seq outranks its state.
      if (least != MemberState.DONE && completed >= seq) {
        return MemberState.DONE;
      }
      return least;
    }
    long oldestHeld = p2p ? t.oldestHeldP2p : t.oldestHeld;
    if (completed >= seq || seq < oldestHeld && enqueued >= seq && oldestHeld != Long.MAX_VALUE) {
      return MemberState.DONE;
    }
    if (enqueued >= seq) {
      return !p2p && t.started >= seq ? MemberState.WAITING : MemberState.ISSUED;
    }
    // Absence in an old window (no fresh snapshot) says nothing: the rank may have issued it since.
    return r.evidence.answered() ? MemberState.NOT_ISSUED : MemberState.UNKNOWN;
  }

  /** Issued before waiting before done: the least of a member's records is where it is. */
  private static int rank(MemberState s) {
    return switch (s) {
      case ISSUED -> 0;
      case WAITING -> 1;
      default -> 2;
    };
  }

  private CollectiveRef ref(StuckOp.Key k, Map<Integer, MemberState> states, CollectiveRecord sample) {
    ProcessGroup g = index.groups.get(k.group());
    CollectiveRecord s = sample;
    String op = s == null ? opFromEvents(k, states) : s.getOp();
    if (k.owner() >= 0) {
      // One rank's send/recv: say which pair, since its p2p seq is that rank's own count.
      s = index.recordsOf(k.owner(), k.group(), k.seq(), true).stream().findFirst().orElse(s);
      op = s == null ? "?" : s.getOp() + " " + k.owner() + (s.getOp().equals("recv") ? "<-" : "->") + s.getPeer();
    }
    return new CollectiveRef(k.group().name(), g == null ? "" : g.getDesc(), k.seq(), k.p2p(), op,
        s == null || s.getCommsId() == 0 ? "" : CommsId.format(s.getCommsId()));
  }

  /** Without records (watchdog lines only), the op a rank's timeout event names. */
  private String opFromEvents(StuckOp.Key k, Map<Integer, MemberState> states) {
    for (int rank : states.keySet()) {
      RankIndex r = index.rank(rank);
      if (r == null) {
        continue;
      }
      for (RankEvent e : r.evidence.events()) {
        if (e.getSeq() == k.seq() && !e.getOp().isEmpty()) {
          return e.getOp();
        }
      }
    }
    return "collective";
  }
}
