package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.RankEvent;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Names the suspects of each stuck operation from where its members are: a lost or unresponsive member is dead,
 * one that never issued it is a CPU-side stall, one whose device never ran it a GPU-side stall. A member that is
 * missing because it is itself stuck in an earlier operation points to that operation instead, so only root causes
 * name culprits and the waits they cause become consequences.
 */
final class MemberClassifier {
  private final JobIndex index;
  private final StuckOperations stuck;
  private final Rhythm rhythm;

  private MemberClassifier(JobIndex index, StuckOperations stuck, Rhythm rhythm) {
    this.index = index;
    this.stuck = stuck;
    this.rhythm = rhythm;
  }

  /** Classifies every stuck operation, including those found on the way because members are blocked in them. */
  static void classify(JobIndex index, StuckOperations stuck, Rhythm rhythm) {
    MemberClassifier classifier = new MemberClassifier(index, stuck, rhythm);
    // Classifying an operation can add the operations its members are blocked in; iterate until none are added.
    Set<StuckOp.Key> classified = new HashSet<>();
    List<StuckOp> pending = List.copyOf(stuck.all());
    while (!pending.isEmpty()) {
      for (StuckOp op : pending) {
        classified.add(op.key);
        classifier.classify(op);
      }
      pending = stuck.all().stream().filter(op -> !classified.contains(op.key)).toList();
    }
  }

  /**
   * The timeouts and errors ranks reported, one evidence line per kind; a rank whose watchdog is blocked with
   * nothing outstanding on its device becomes a watchdog suspect of the operations it has not completed.
   */
  static List<Evidence> rankEvents(JobIndex index, StuckOperations stuck) {
    Map<String, List<Integer>> byKind = new TreeMap<>();
    for (RankIndex r : index.ranks.values()) {
      for (RankEvent e : r.evidence.events()) {
        byKind.computeIfAbsent(e.getKind().name(), k -> new ArrayList<>()).add(r.rank());
        if (e.getKind() == RankEvent.Kind.WATCHDOG_STUCK && r.oldestIncomplete == null) {
          // A blocked watchdog with nothing outstanding on the device is the watchdog's own problem.
          for (StuckOp op : stuck.all()) {
            if (op.states.containsKey(r.rank()) && op.states.get(r.rank()) != MemberState.DONE) {
              op.suspect(Cause.WATCHDOG, r.rank());
            }
          }
        }
      }
    }
    List<Evidence> out = new ArrayList<>();
    byKind.forEach((kind, rs) -> {
      List<Integer> distinct = rs.stream().distinct().toList();
      out.add(new Evidence(Evidence.Kind.RANK_EVENT, distinct, Wording.capitalize(Wording.who(distinct)) + " reported "
          + kind.toLowerCase().replace('_', ' ')));
    });
    return out;
  }

  private void classify(StuckOp n) {
    List<Integer> waiting = n.in(MemberState.WAITING);
    List<Integer> done = n.in(MemberState.DONE);
    boolean peersAhead = !waiting.isEmpty() || !done.isEmpty();
    for (Map.Entry<Integer, MemberState> e : n.states.entrySet()) {
      int rank = e.getKey();
      MemberState s = e.getValue();
      RankIndex r = index.rank(rank);
      if (s == MemberState.DONE) {
        continue;
      }
      // A lost member will never finish its part, even one its device had started; one that could not produce
      // a dump when asked is gone or wedged.
      if (r != null && (r.evidence.liveness() == Liveness.LOST || r.evidence.liveness() == Liveness.UNRESPONSIVE)) {
        n.suspect(Cause.DEAD, rank);
        continue;
      }
      if (s == MemberState.WAITING) {
        continue;
      }
      if (s == MemberState.UNKNOWN) {
        // No evidence at all, or only a stale window from a rank that is still connected: blame needs more.
        if (r == null || r.evidence.liveness() != Liveness.ALIVE && r.evidence.liveness() != Liveness.UNKNOWN
            || r.evidence.isEmpty() && index.job.offline()) {
          n.suspect(silentCause(n), rank);
        }
        continue;
      }
      CollectiveRecord blocking = r.oldestIncomplete;
      boolean cutBefore = blocking != null && isEarlier(r, blocking, n) && cutShort(r, blocking);
      if (s == MemberState.NOT_ISSUED && !failedOn(n) && (observedBeforeTheWait(r, n) || cutBefore)) {
        // Its evidence was taken before its peers began to wait, or too soon after to expect it there, or before an
        // earlier collective of its completed (a peer shows it done): it says nothing of whether the rank issued the
        // op later (its dump predates the wait).
        n.observedBefore(rank);
        continue;
      }
      boolean blockedHere = blocking != null && sameOp(r, blocking, n);
      if (blocking != null && !blockedHere && isEarlier(r, blocking, n) && !cutShort(r, blocking)) {
        StuckOp other = opOf(r, blocking);
        if (other != null) {
          n.blockedBy(other.label());
          continue;
        }
      }
      if (s == MemberState.NOT_ISSUED && failedBefore(r, n)) {
        // Its program stopped where an earlier collective of its failed (a peer's connection closed): it waited
        // there until the failure, it did not stall by itself.
        continue;
      }
      if (s == MemberState.NOT_ISSUED && hasDeviceError(r)) {
        // A CUDA error raises in the rank's program at its next call into the device: the program stopped before
        // it could issue this collective, and the device is the cause (DIAGNOSIS.md §4, "The first failure").
        n.suspect(Cause.DEVICE_ERROR, rank);
        continue;
      }
      if (s == MemberState.NOT_ISSUED) {
        // A main thread inside a torch.distributed call (a send/recv gloo does not record, a barrier, a
        // collective of another group) waits for peers there: it did not stall on the CPU by itself.
        Optional<String> call = PythonStacks.MainThread.of(r.evidence).flatMap(PythonStacks.MainThread::call)
            .map(PythonStacks::where);
        if (call.isPresent()) {
          n.waitsInCall(rank, call.get());
        } else {
          n.suspect(Cause.CPU, rank);
        }
      } else if (!n.p2p && timedOutIn(r, n) && !hasDeviceError(r) && !hasStuckWatchdog(r)
          && !finishedPast(done, n).isEmpty()) {
        // Its own watchdog, running normally, says its device never finished this collective, yet peers finished
        // it and the next one of the group, which needs this rank's device past it: seq S is not the same
        // collective on these ranks, so they did not issue the same collectives in the same order. (A device
        // fault that hides completions from the process shows as a CUDA error or a stuck watchdog instead.)
        finishedPast(done, n).forEach(d -> n.disagree(rank, d));
      } else if (r.recordsStarts ? peersAhead : !done.isEmpty()) {
        // Issued, and its device never ran it while peers' devices did (or, without start events,
        // while peers completed it).
        n.suspect(hasDeviceError(r) ? Cause.DEVICE_ERROR : Cause.GPU, rank);
      }
    }
    int members = n.states.size();
    if (!n.isRoot() && n.blockedBy().isEmpty() && waiting.size() == members && membersUnseen(n)) {
      // A collective does not hang on the members it shows alone: one the evidence cannot show holds it up. Every
      // rank that left no evidence is a possible member (DIAGNOSIS.md §4, "Members the evidence cannot show").
      List<Integer> silent = new ArrayList<>();
      for (int rank = 0; rank < index.job.worldSize(); rank++) {
        if (index.rank(rank) == null) {
          silent.add(rank);
        }
      }
      Cause cause = silentCause(n);
      silent.forEach(rank -> n.suspect(cause, rank));
      if (silent.isEmpty()) {
        n.unseenMember();
      }
    }
    if (!n.isRoot() && n.blockedBy().isEmpty() && !n.hasUnseenMember()) {
      if (waiting.size() == members) {
        n.suspectFabric();
      } else if (waiting.size() + n.in(MemberState.ISSUED).size() == members) {
        n.allIssuedNoneStarted();
      }
    }
  }

  /**
   * Whether {@code n}'s members as the evidence gives them may leave some out: the group's members were taken from
   * the records of the ranks that left evidence (gloo writes none in its dumps), or it shows one member alone.
   */
  private boolean membersUnseen(StuckOp n) {
    dev.frdiag.proto.v1.ProcessGroup g = index.groups.get(n.group);
    return n.states.size() < 2 || g != null && g.getMembersFromRecords();
  }

  /**
   * What a member that left no evidence while its peers wait in {@code n} is (DIAGNOSIS.md §4, "Members the evidence
   * cannot show"): dead where some gloo collective of the job failed (it ends in an error when a peer's connection
   * closes, and a process that dies has its connections closed); alive and stuck where, with no collective failed,
   * the peers waited in {@code n} longer than a few of its group's intervals with their connections to it open;
   * else unknown.
   */
  private Cause silentCause(StuckOp n) {
    for (RankIndex r : index.ranks.values()) {
      if (r.newest != null && Completion.retiredUnknown(r.newest)
          && stuck.stateOf(r.rank(), r.groupsByName.getOrDefault(r.newest.getProcessGroup(), n.group),
              r.newest.getCollectiveSeq(), false) == MemberState.WAITING) {
        return Cause.NO_EVIDENCE;
      }
    }
    long within = Rhythm.WAIT_RHYTHMS * rhythm.interval(n.group);
    for (Map.Entry<Integer, MemberState> e : n.states.entrySet()) {
      RankIndex r = index.rank(e.getKey());
      if (r == null || r.evidence.observedAtNs() <= 0 || within <= 0) {
        continue;
      }
      for (CollectiveRecord rec : stuck.recordsIn(n, e.getKey())) {
        if (Completion.inside(rec) && rec.getTimeCreatedNs() > 0
            && r.evidence.observedAtNs() - rec.getTimeCreatedNs() >= within) {
          return Cause.WEDGED;
        }
      }
    }
    return Cause.NO_EVIDENCE;
  }

  /**
   * Whether {@code r}'s program stopped at a collective issued before {@code n} that failed (a gloo collective retired
   * while a member never joined it, and the rank issued nothing after it); {@code n} is then held up by that one.
   */
  private boolean failedBefore(RankIndex r, StuckOp n) {
    CollectiveRecord last = r.newest;
    if (last == null || last.getIsP2P() || !Completion.retiredUnknown(last) || !isEarlier(r, last, n)) {
      return false;
    }
    GroupKey g = r.groupsByName.get(last.getProcessGroup());
    if (g == null || stuck.stateOf(r.rank(), g, last.getCollectiveSeq(), false) != MemberState.WAITING) {
      return false;
    }
    StuckOp other = opOf(r, last);
    if (other == null || other.key.equals(n.key)) {
      return false;
    }
    n.blockedBy(other.label());
    return true;
  }

  /**
   * Whether {@code n} failed on a member (a gloo collective that ended without completing, §4): the failure is
   * evidence, newer than any dump taken before it, that a member never joined.
   */
  private boolean failedOn(StuckOp n) {
    return !n.p2p && n.owner < 0 && stuck.failed(n.group, n.seq);
  }

  /**
   * Whether {@code r}'s evidence was taken before the first member of {@code n} issued it, plus the group's usual
   * spread of issue times (DIAGNOSIS.md §3, "A consistent cut"); false when either time is unknown.
   */
  private boolean observedBeforeTheWait(RankIndex r, StuckOp n) {
    long observed = r.evidence.observedAtNs();
    if (observed <= 0 || n.firstCreatedNs == Long.MAX_VALUE || n.firstCreatedNs <= 0) {
      return false;
    }
    return observed < n.firstCreatedNs + rhythm.skew(n.group);
  }

  private static boolean sameOp(RankIndex r, CollectiveRecord rec, StuckOp n) {
    GroupKey g = r.groupsByName.get(rec.getProcessGroup());
    if (!n.group.equals(g) || n.p2p != rec.getIsP2P()) {
      return false;
    }
    if (n.owner >= 0 && r.rank() != n.owner) {
      return rec.getPeer() == n.owner;
    }
    return n.seq == (rec.getIsP2P() ? rec.getP2PSeq() : rec.getCollectiveSeq());
  }

  /** True when the rank issued {@code blocking} before it would have reached {@code n}. */
  private boolean isEarlier(RankIndex r, CollectiveRecord blocking, StuckOp n) {
    List<CollectiveRecord> here = stuck.recordsIn(n, r.rank());
    return here.isEmpty() || RankIndex.isBefore(blocking, here.get(0));
  }

  /**
   * Whether {@code rec}, a rank's incomplete collective record, shows only where its evidence was cut: a peer
   * completed that collective, which ends on a member only once every member joined (§3, "A consistent cut"). The
   * rank went on from it; where it went, its evidence does not say.
   */
  private boolean cutShort(RankIndex r, CollectiveRecord rec) {
    GroupKey g = r.groupsByName.get(rec.getProcessGroup());
    return g != null && !rec.getIsP2P() && stuck.cutShort(g, rec.getCollectiveSeq());
  }

  private StuckOp opOf(RankIndex r, CollectiveRecord rec) {
    GroupKey g = r.groupsByName.get(rec.getProcessGroup());
    if (g == null) {
      return null;
    }
    if (rec.getIsP2P() && g.size() > 2) {
      return stuck.op(g, rec.getP2PSeq(), true, r.rank());
    }
    return stuck.op(g, rec.getIsP2P() ? rec.getP2PSeq() : rec.getCollectiveSeq(), rec.getIsP2P());
  }

  /** True when the rank's own watchdog reported a timeout on this very collective. */
  private static boolean timedOutIn(RankIndex r, StuckOp n) {
    return r.evidence.events().stream().anyMatch(e -> e.getKind() == RankEvent.Kind.WATCHDOG_TIMEOUT
        && e.getSeq() == n.seq && e.getProcessGroup().equals(n.group.name()));
  }

  /** The members among {@code done} that completed a collective of the group after this one. */
  private List<Integer> finishedPast(List<Integer> done, StuckOp n) {
    return done.stream().filter(d -> {
      RankIndex.Track t = index.track(d, n.group);
      return t != null && t.completed > n.seq;
    }).toList();
  }

  private static boolean hasStuckWatchdog(RankIndex r) {
    return r.evidence.events().stream().anyMatch(e -> e.getKind() == RankEvent.Kind.WATCHDOG_STUCK);
  }

  private static boolean hasDeviceError(RankIndex r) {
    return r.evidence.events().stream().anyMatch(e -> e.getKind() == RankEvent.Kind.CUDA_ERROR);
  }
}
