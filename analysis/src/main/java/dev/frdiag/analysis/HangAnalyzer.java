package dev.frdiag.analysis;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Finds which rank diverged, on which collective, and why, from every rank's evidence.
 *
 * <p>A pure function: no I/O, no clock; the same evidence in any rank order gives the same diagnosis.
 * Collectives are matched across ranks by (process group identity, collective_seq) and P2P ops by
 * (process group identity, p2p_seq), never by record id. Each stuck collective's members are classified
 * (completed, waiting, issued-not-started, not issued, unknown); a member that is missing because it is
 * itself stuck in an earlier collective points to that collective, so only root causes name culprits and
 * the waits they cause are listed as consequences.
 */
public final class HangAnalyzer {

  /**
   * Collectives a waiting rank may have issued past a stuck one before its program counts as having run on
   * without the group. Asynchronous launch lets a rank whose own device or link is stuck issue a few more (a
   * DDP backward issues one all_reduce per bucket); many more means its program never waited on this one.
   */
  static final long RUN_AHEAD = 16;

  /** Consequence collectives named in the cascade evidence; the rest are counted. */
  static final int CASCADE_LISTED = 5;

  private HangAnalyzer() {}

  /** Analyses {@code job}. */
  public static Diagnosis analyze(JobEvidence job) {
    return ContextRules.apply(new Run(job).diagnose(), job);
  }

  /** Where one member is relative to one collective. */
  enum MemberState { DONE, WAITING, ISSUED, NOT_ISSUED, UNKNOWN }

  /** Causes a root collective can have, in the order one is preferred as the verdict. */
  private enum Cause {
    MISMATCH(Symptom.MISMATCH),
    DEAD(Symptom.DEAD_RANK),
    DEVICE_ERROR(Symptom.GPU_STALL),
    CPU(Symptom.CPU_STALL),
    GPU(Symptom.GPU_STALL),
    /** No usable evidence from a member (no dump, an unreadable one): likely gone, but weaker than proof. */
    NO_EVIDENCE(Symptom.DEAD_RANK),
    WATCHDOG(Symptom.WATCHDOG_STUCK),
    FABRIC(Symptom.FABRIC);

    final Symptom symptom;

    Cause(Symptom symptom) {
      this.symptom = symptom;
    }
  }

  /**
   * Identity of one operation across ranks. {@code owner} is -1, except for a send/recv in a group of more than
   * two ranks, whose p2p seqs are per rank and cannot be matched: there the node is one rank's op and its peer.
   */
  private record NodeKey(GroupKey group, long seq, boolean p2p, int owner) {}

  /** One stuck operation being analysed. */
  private static final class Node {
    final GroupKey group;
    final long seq;
    final boolean p2p;
    final int owner;
    final Map<Integer, MemberState> states = new TreeMap<>();
    final Map<Cause, Set<Integer>> suspects = new EnumMap<>(Cause.class);
    final Set<String> blockedBy = new TreeSet<>();
    CollectiveRecord sample;
    long firstCreatedNs = Long.MAX_VALUE;
    boolean allIssuedNoneStarted;

    Node(GroupKey group, long seq, boolean p2p, int owner) {
      this.group = group;
      this.seq = seq;
      this.p2p = p2p;
      this.owner = owner;
    }

    NodeKey id() {
      return new NodeKey(group, seq, p2p, owner);
    }

    boolean isRoot() {
      return !suspects.isEmpty();
    }

    void suspect(Cause cause, int rank) {
      suspects.computeIfAbsent(cause, c -> new TreeSet<>()).add(rank);
    }

    List<Integer> in(MemberState s) {
      return states.entrySet().stream().filter(e -> e.getValue() == s).map(Map.Entry::getKey).toList();
    }
  }

  private static final class Run {
    final JobEvidence job;
    final Map<Integer, RankIndex> ranks = new TreeMap<>();
    final Map<GroupKey, ProcessGroup> groups = new TreeMap<>();
    /** Sorted members of each group, computed once per group (not per rank). */
    final Map<GroupKey, List<Integer>> members = new HashMap<>();
    final Map<NodeKey, Node> nodes = new LinkedHashMap<>();
    final List<Evidence> jobEvidence = new ArrayList<>();

    Run(JobEvidence job) {
      this.job = job;
      for (RankEvidence e : job.ranks()) {
        RankIndex index = new RankIndex(e);
        ranks.put(e.rank(), index);
        for (ProcessGroup g : e.groups()) {
          GroupKey key = GroupKey.of(g);
          if (groups.putIfAbsent(key, g) == null) {
            members.put(key, g.getRanksList().stream().sorted().toList());
          }
        }
      }
    }

    Diagnosis diagnose() {
      for (GroupKey g : groups.keySet()) {
        findStuck(g);
      }
      // Resolving a node can add the nodes its members are blocked in; iterate until none are added.
      Set<NodeKey> classified = new java.util.HashSet<>();
      List<Node> pending = new ArrayList<>(nodes.values());
      while (!pending.isEmpty()) {
        for (Node n : pending) {
          classified.add(n.id());
          classify(n);
        }
        pending = nodes.values().stream().filter(n -> !classified.contains(n.id())).toList();
      }
      List<Evidence> mismatches = checkSignatures();
      addRankEvents();
      return verdict(mismatches);
    }

    // ---- finding stuck operations ----

    private void findStuck(GroupKey g) {
      long firstCollective = Long.MAX_VALUE;
      long firstP2p = Long.MAX_VALUE;
      List<long[]> pairNodes = new ArrayList<>();
      long lastProgress = 0;
      for (int member : members.get(g)) {
        RankIndex r = ranks.get(member);
        RankIndex.Track t = r == null ? null : r.tracks.get(g);
        if (t == null) {
          continue;
        }
        lastProgress = Math.max(lastProgress, Math.max(t.lastProgressNs, t.lastCompletionNs));
        firstCollective = Math.min(firstCollective, firstOutstanding(t.collectives, t.enqueued, t.completed));
        long mine = firstOutstanding(t.p2p, t.p2pEnqueued, t.p2pCompleted);
        if (g.size() > 2) {
          if (mine != Long.MAX_VALUE && t.p2p.containsKey(mine)) {
            pairNodes.add(new long[] {member, mine});
          }
        } else {
          firstP2p = Math.min(firstP2p, mine);
        }
      }
      if (!job.offline() && job.observedAtNs() - lastProgress < job.stallThreshold().toNanos()) {
        return;
      }
      if (firstCollective != Long.MAX_VALUE) {
        addIfStalled(g, firstCollective, false);
      }
      if (firstP2p != Long.MAX_VALUE) {
        addIfStalled(g, firstP2p, true);
      }
      for (long[] pair : pairNodes) {
        addIfStalled(node(g, pair[1], true, (int) pair[0]));
      }
    }

    private static long firstOutstanding(TreeMap<Long, List<CollectiveRecord>> bySeq, long enqueued,
        long completed) {
      for (Map.Entry<Long, List<CollectiveRecord>> e : bySeq.entrySet()) {
        if (e.getKey() > completed && !allCompleted(e.getValue())) {
          return e.getKey();
        }
      }
      // Issued but no longer (or never) in the ring: progress alone says it is outstanding.
      return enqueued > completed && !bySeq.containsKey(completed + 1) ? completed + 1 : Long.MAX_VALUE;
    }

    private void addIfStalled(GroupKey g, long seq, boolean p2p) {
      addIfStalled(node(g, seq, p2p, -1));
    }

    private void addIfStalled(Node n) {
      if (!job.offline() && n.firstCreatedNs != Long.MAX_VALUE
          && job.observedAtNs() - n.firstCreatedNs < job.stallThreshold().toNanos()) {
        nodes.remove(n.id());
      }
    }

    private Node node(GroupKey g, long seq, boolean p2p) {
      return node(g, seq, p2p, -1);
    }

    private Node node(GroupKey g, long seq, boolean p2p, int owner) {
      Node probe = new Node(g, seq, p2p, owner);
      Node existing = nodes.get(probe.id());
      if (existing != null) {
        return existing;
      }
      nodes.put(probe.id(), probe);
      List<Integer> involved = members.get(g);
      int peer = -1;
      if (owner >= 0) {
        List<CollectiveRecord> mine = recordsOf(owner, g, seq, true);
        peer = mine.isEmpty() ? -1 : mine.get(0).getPeer();
        involved = peer < 0 || peer == owner ? List.of(owner) : List.of(Math.min(owner, peer), Math.max(owner, peer));
      }
      for (int member : involved) {
        MemberState s = owner >= 0 && member != owner ? counterpartState(member, g, owner)
            : stateOf(member, g, seq, p2p);
        probe.states.put(member, s);
        List<CollectiveRecord> recs = recordsIn(probe, member);
        for (CollectiveRecord r : recs) {
          if (probe.sample == null || r.getCommsId() != 0 && probe.sample.getCommsId() == 0) {
            probe.sample = r;
          }
          if (r.getState() != CollectiveState.COMPLETED) {
            probe.firstCreatedNs = Math.min(probe.firstCreatedNs, r.getTimeCreatedNs());
          }
        }
      }
      return probe;
    }

    /** The records {@code rank} holds for node {@code n}: for a pair node's peer, its counterpart op. */
    private List<CollectiveRecord> recordsIn(Node n, int rank) {
      if (n.owner < 0 || rank == n.owner) {
        return recordsOf(rank, n.group, n.seq, n.p2p);
      }
      CollectiveRecord c = counterpart(rank, n.group, n.owner);
      return c == null ? List.of() : List.of(c);
    }

    /** The peer's outstanding send/recv with {@code owner} in {@code g}, or null. */
    private CollectiveRecord counterpart(int rank, GroupKey g, int owner) {
      RankIndex r = ranks.get(rank);
      RankIndex.Track t = r == null ? null : r.tracks.get(g);
      if (t == null) {
        return null;
      }
      for (List<CollectiveRecord> recs : t.p2p.values()) {
        for (CollectiveRecord rec : recs) {
          if (rec.getPeer() == owner && rec.getState() != CollectiveState.COMPLETED) {
            return rec;
          }
        }
      }
      return null;
    }

    /** Where a pair node's peer is: waiting or issued when it has the counterpart outstanding, else not issued. */
    private MemberState counterpartState(int rank, GroupKey g, int owner) {
      RankIndex r = ranks.get(rank);
      if (r == null || r.evidence.isEmpty() && !r.evidence.answered()) {
        return MemberState.UNKNOWN;
      }
      CollectiveRecord c = counterpart(rank, g, owner);
      if (c == null) {
        return MemberState.NOT_ISSUED;
      }
      return c.getState() == CollectiveState.STARTED ? MemberState.WAITING : MemberState.ISSUED;
    }

    private List<CollectiveRecord> recordsOf(int rank, GroupKey g, long seq, boolean p2p) {
      RankIndex r = ranks.get(rank);
      RankIndex.Track t = r == null ? null : r.tracks.get(g);
      if (t == null) {
        return List.of();
      }
      List<CollectiveRecord> recs = (p2p ? t.p2p : t.collectives).get(seq);
      return recs == null ? List.of() : recs;
    }

    private MemberState stateOf(int rank, GroupKey g, long seq, boolean p2p) {
      RankIndex r = ranks.get(rank);
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
        CollectiveState least = CollectiveState.COMPLETED;
        for (CollectiveRecord rec : recs) {
          if (rec.getStateValue() < least.getNumber()) {
            least = rec.getState();
          }
        }
        return switch (least) {
          case COMPLETED -> MemberState.DONE;
          case STARTED -> MemberState.WAITING;
          default -> completed >= seq ? MemberState.DONE : MemberState.ISSUED;
        };
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

    // ---- classifying members of a stuck operation ----

    private void classify(Node n) {
      List<Integer> waiting = n.in(MemberState.WAITING);
      List<Integer> done = n.in(MemberState.DONE);
      boolean peersAhead = !waiting.isEmpty() || !done.isEmpty();
      for (Map.Entry<Integer, MemberState> e : n.states.entrySet()) {
        int rank = e.getKey();
        MemberState s = e.getValue();
        RankIndex r = ranks.get(rank);
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
              || r.evidence.isEmpty() && job.offline()) {
            n.suspect(Cause.NO_EVIDENCE, rank);
          }
          continue;
        }
        CollectiveRecord blocking = r.oldestIncomplete;
        boolean blockedHere = blocking != null && sameOp(r, blocking, n);
        if (blocking != null && !blockedHere && isEarlier(r, blocking, n)) {
          Node other = nodeOf(r, blocking);
          if (other != null) {
            n.blockedBy.add(label(other));
            continue;
          }
        }
        if (s == MemberState.NOT_ISSUED) {
          n.suspect(Cause.CPU, rank);
        } else if (r.recordsStarts ? peersAhead : !done.isEmpty()) {
          // Issued, and its device never ran it while peers' devices did (or, without start events,
          // while peers completed it).
          n.suspect(hasDeviceError(r) ? Cause.DEVICE_ERROR : Cause.GPU, rank);
        }
      }
      int members = n.states.size();
      if (n.suspects.isEmpty() && n.blockedBy.isEmpty()) {
        if (waiting.size() == members) {
          n.suspects.put(Cause.FABRIC, new TreeSet<>());
        } else if (waiting.size() + n.in(MemberState.ISSUED).size() == members) {
          n.allIssuedNoneStarted = true;
        }
      }
    }

    private boolean sameOp(RankIndex r, CollectiveRecord rec, Node n) {
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
    private boolean isEarlier(RankIndex r, CollectiveRecord blocking, Node n) {
      List<CollectiveRecord> here = recordsIn(n, r.rank());
      return here.isEmpty() || RankIndex.isBefore(blocking, here.get(0));
    }

    private Node nodeOf(RankIndex r, CollectiveRecord rec) {
      GroupKey g = r.groupsByName.get(rec.getProcessGroup());
      if (g == null) {
        return null;
      }
      if (rec.getIsP2P() && g.size() > 2) {
        return node(g, rec.getP2PSeq(), true, r.rank());
      }
      return node(g, rec.getIsP2P() ? rec.getP2PSeq() : rec.getCollectiveSeq(), rec.getIsP2P());
    }

    private static boolean hasDeviceError(RankIndex r) {
      return r.evidence.events().stream().anyMatch(e -> e.getKind() == RankEvent.Kind.CUDA_ERROR);
    }

    // ---- program bugs: members disagreeing on what an operation is ----

    private List<Evidence> checkSignatures() {
      List<Evidence> found = new ArrayList<>();
      Set<GroupKey> stuckGroups = new java.util.HashSet<>();
      nodes.values().forEach(n -> stuckGroups.add(n.group));
      for (GroupKey g : groups.keySet()) {
        if (!stuckGroups.contains(g)) {
          continue;
        }
        int groupSize = (int) g.size();
        Map<Long, Map<Integer, List<CollectiveRecord>>> bySeq = new TreeMap<>();
        Map<Long, Map<Integer, List<CollectiveRecord>>> p2pBySeq = new TreeMap<>();
        for (int member : members.get(g)) {
          RankIndex r = ranks.get(member);
          RankIndex.Track t = r == null ? null : r.tracks.get(g);
          if (t == null) {
            continue;
          }
          t.collectives.forEach((seq, recs) -> {
            // The ring may have overwritten the first members of the oldest group it holds: a partial group
            // compared with a whole one would look like a program bug.
            if (seq == t.oldestHeld && recs.size() > 1) {
              return;
            }
            bySeq.computeIfAbsent(seq, x -> new TreeMap<>()).put(member, recs);
          });
          t.p2p.forEach((seq, recs) -> p2pBySeq.computeIfAbsent(seq, x -> new TreeMap<>()).put(member, recs));
        }
        Evidence e = firstCollectiveMismatch(g, groupSize, bySeq);
        if (e == null && groupSize == 2) {
          e = firstP2pMismatch(g, p2pBySeq);
        }
        if (e != null) {
          found.add(e);
        }
      }
      return found;
    }

    private Evidence firstCollectiveMismatch(GroupKey g, int groupSize,
        Map<Long, Map<Integer, List<CollectiveRecord>>> bySeq) {
      for (Map.Entry<Long, Map<Integer, List<CollectiveRecord>>> e : bySeq.entrySet()) {
        long seq = e.getKey();
        Map<Integer, List<CollectiveRecord>> byRank = e.getValue();
        // Problems inside one rank's own op (a gather whose output cannot hold group-size inputs, …).
        Map<Integer, List<String>> own = new TreeMap<>();
        byRank.forEach((rank, recs) -> {
          List<String> problems = CollectiveMatch.selfCheck(recs, groupSize);
          if (!problems.isEmpty()) {
            own.put(rank, problems);
          }
        });
        if (!own.isEmpty()) {
          List<Integer> culprits = List.copyOf(own.keySet());
          return mismatch(g, seq, false, culprits, own.entrySet().stream()
              .map(x -> "rank " + x.getKey() + ": " + String.join("; ", x.getValue()))
              .collect(Collectors.joining("; ")) + " (" + g.name() + " seq " + seq + ")");
        }
        if (byRank.size() < 2) {
          continue;
        }
        Map<Integer, List<Object>> keys = new TreeMap<>();
        byRank.forEach((rank, recs) -> keys.put(rank, CollectiveMatch.key(recs)));
        if (new java.util.HashSet<>(keys.values()).size() > 1) {
          List<Integer> culprits = minority(g, seq, keys);
          List<Integer> others = keys.keySet().stream().filter(x -> !culprits.contains(x)).toList();
          String expected = others.isEmpty() ? "?" : CollectiveMatch.describe(byRank.get(others.get(0)));
          return mismatch(g, seq, false, culprits, culprits.stream()
              .map(c -> "rank " + c + " issued " + CollectiveMatch.describe(byRank.get(c)))
              .collect(Collectors.joining("; ")) + " where ranks " + compact(others) + " issued " + expected
              + " (" + g.name() + " seq " + seq + ")");
        }
        if (byRank.size() == groupSize && CollectiveMatch.isAllToAll(byRank.values().iterator().next())) {
          long in = byRank.values().stream().mapToLong(CollectiveMatch::inputNumel).sum();
          long out = byRank.values().stream().mapToLong(CollectiveMatch::outputNumel).sum();
          if (in != out) {
            // The totals say the split sizes disagree, not which rank is wrong.
            return mismatch(g, seq, false, List.copyOf(byRank.keySet()), "all_to_all totals do not balance: "
                + "total input numel " + in + " but total output numel " + out + " over ranks "
                + compact(List.copyOf(byRank.keySet())) + " (" + g.name() + " seq " + seq + ")");
          }
        }
      }
      return null;
    }

    private Evidence firstP2pMismatch(GroupKey g, Map<Long, Map<Integer, List<CollectiveRecord>>> bySeq) {
      for (Map.Entry<Long, Map<Integer, List<CollectiveRecord>>> e : bySeq.entrySet()) {
        if (e.getValue().size() != 2) {
          continue;
        }
        List<Integer> pair = List.copyOf(e.getValue().keySet());
        CollectiveRecord a = e.getValue().get(pair.get(0)).get(0);
        CollectiveRecord b = e.getValue().get(pair.get(1)).get(0);
        String problem = CollectiveMatch.p2pProblem(pair.get(0), a, pair.get(1), b);
        if (problem != null) {
          return mismatch(g, e.getKey(), true, pair, problem + " (" + g.name() + " p2p seq " + e.getKey() + ")");
        }
      }
      return null;
    }

    private Evidence mismatch(GroupKey g, long seq, boolean p2p, List<Integer> culprits, String detail) {
      Node n = node(g, seq, p2p);
      for (int c : culprits) {
        n.suspect(Cause.MISMATCH, c);
      }
      return new Evidence("signature_mismatch", culprits, detail);
    }

    /**
     * The members whose op is the odd one out: the minority when there is a majority; with a tie (two-member
     * groups), the members whose op also differs from what they issued for the same op earlier in the group.
     */
    private List<Integer> minority(GroupKey g, long seq, Map<Integer, List<Object>> keys) {
      Map<List<Object>, List<Integer>> byKey = new HashMap<>();
      keys.forEach((rank, key) -> byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(rank));
      int max = byKey.values().stream().mapToInt(List::size).max().orElse(0);
      List<List<Integer>> majorities = byKey.values().stream().filter(l -> l.size() == max).toList();
      if (majorities.size() == 1) {
        return keys.keySet().stream().filter(r -> !majorities.get(0).contains(r)).sorted().toList();
      }
      List<Integer> changed = new ArrayList<>();
      for (int rank : keys.keySet()) {
        RankIndex.Track t = ranks.get(rank).tracks.get(g);
        List<CollectiveRecord> here = t.collectives.get(seq);
        String ops = opsOf(here);
        Map.Entry<Long, List<CollectiveRecord>> prev = t.collectives.lowerEntry(seq);
        while (prev != null && !opsOf(prev.getValue()).equals(ops)) {
          prev = t.collectives.lowerEntry(prev.getKey());
        }
        if (prev != null && !CollectiveMatch.key(prev.getValue()).equals(keys.get(rank))) {
          changed.add(rank);
        }
      }
      return changed.isEmpty() || changed.size() == keys.size() ? keys.keySet().stream().sorted().toList()
          : changed;
    }

    /** The op names of one seq (several for a coalesced group), without sizes. */
    private static String opsOf(List<CollectiveRecord> recs) {
      return recs.stream().map(CollectiveRecord::getOp).collect(Collectors.joining("+"));
    }

    private void addRankEvents() {
      Map<String, List<Integer>> byKind = new TreeMap<>();
      for (RankIndex r : ranks.values()) {
        for (RankEvent e : r.evidence.events()) {
          byKind.computeIfAbsent(e.getKind().name(), k -> new ArrayList<>()).add(r.rank());
          if (e.getKind() == RankEvent.Kind.WATCHDOG_STUCK && r.oldestIncomplete == null) {
            // A blocked watchdog with nothing outstanding on the device is the watchdog's own problem.
            for (Node n : nodes.values()) {
              if (n.states.containsKey(r.rank()) && n.states.get(r.rank()) != MemberState.DONE) {
                n.suspect(Cause.WATCHDOG, r.rank());
              }
            }
          }
        }
      }
      byKind.forEach((kind, rs) -> {
        List<Integer> distinct = rs.stream().distinct().toList();
        jobEvidence.add(new Evidence("rank_event", distinct, capitalize(who(distinct)) + " reported "
            + kind.toLowerCase().replace('_', ' ')));
      });
    }

    // ---- the verdict ----

    private Diagnosis verdict(List<Evidence> mismatches) {
      // Roots that wait on nothing else come first: a collective some of whose members are stuck elsewhere
      // is at best a second symptom of the same fault. Then the one the job reached first.
      List<Node> roots = nodes.values().stream().filter(Node::isRoot)
          .sorted(Comparator.comparing((Node n) -> !n.blockedBy.isEmpty())
              .thenComparingLong(n -> n.firstCreatedNs).thenComparing(n -> n.group).thenComparingLong(n -> n.seq))
          .toList();
      List<Integer> lost = ranks.values().stream()
          .filter(r -> r.evidence.liveness() == Liveness.LOST).map(RankIndex::rank).toList();
      List<Integer> silent = new ArrayList<>();
      for (int rank = 0; rank < job.worldSize(); rank++) {
        RankIndex r = ranks.get(rank);
        if (r == null || !r.evidence.answered() && r.evidence.liveness() != Liveness.LOST) {
          silent.add(rank);
        }
      }
      List<Evidence> evidence = new ArrayList<>();
      if (roots.isEmpty()) {
        if (ranks.isEmpty()) {
          evidence.addAll(jobEvidence);
          evidence.add(new Evidence("insufficient", List.of(), "no rank's records, dump or watchdog line"));
          return diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), null, 0.3, evidence,
              "Nothing here says how the ranks stand: no Flight Recorder dump, no watchdog line.",
              "Collect the ranks' Flight Recorder dumps (fr-diagnose analyze <folder>) or training logs.");
        }
        if (nodes.isEmpty() && lost.isEmpty()) {
          evidence.addAll(jobEvidence);
          return diagnosis(Verdict.NO_HANG, Symptom.NONE, List.of(), null, 1.0, evidence,
              "No hang: every process group with work is making progress.", "Nothing to do.");
        }
        if (nodes.isEmpty()) {
          evidence.add(new Evidence("rank_lost", lost, "ranks " + compact(lost)
              + " disconnected without saying goodbye; no collective is stuck yet"));
          evidence.addAll(jobEvidence);
          return diagnosis(Verdict.HANG, Symptom.DEAD_RANK, lost, null, 0.8, evidence,
              "Rank" + plural(lost) + " " + bare(lost) + " died; the job will hang at its next collective.",
              recommendation(Symptom.DEAD_RANK));
        }
        Node first = nodes.values().stream().min(Comparator.comparingLong((Node n) -> n.firstCreatedNs)
            .thenComparing(n -> n.group).thenComparingLong(n -> n.seq)).orElseThrow();
        evidence.addAll(describe(first));
        evidence.addAll(jobEvidence);
        String missing = first.allIssuedNoneStarted
            ? "every member issued it and none completed, but the ranks do not record device start events, so a "
                + "GPU stall cannot be told from a fabric fault: enable start events (TORCH_NCCL_ENABLE_TIMING=1) "
                + "or add NCCL logs / InfiniBand counters"
            : "the members that could explain it sent no usable evidence" + (silent.isEmpty() ? ""
                : " (no snapshot from ranks " + compact(silent) + ")");
        long runAhead = runAhead(first);
        if (first.allIssuedNoneStarted && runAhead >= RUN_AHEAD) {
          // A waiting rank whose program went on to issue many more collectives on the group was not held up by
          // its own device or CPU: its peers' programs stopped short of this one.
          List<Integer> ahead = first.states.keySet().stream().filter(r -> runAheadOf(r, first) >= RUN_AHEAD)
              .toList();
          evidence.add(new Evidence("ran_ahead", ahead, capitalize(who(ahead)) + " issued " + label(first)
              + " and " + runAhead + " more collectives on " + first.group.name() + " after it while none "
              + "completed: " + (ahead.size() == 1 ? "its" : "their") + " program ran on, so "
              + (ahead.size() == 1 ? "it is" : "they are") + " not the culprit; a member that never issued it is"
              + (silent.isEmpty() ? " (its evidence is not here)" : "")));
          return diagnosis(Verdict.HANG, Symptom.CPU_STALL, List.of(), first, 0.5, evidence,
              capitalize(who(ahead)) + " ran " + runAhead + " collectives past " + label(first)
                  + ", which never completed: a peer never issued it (CPU side or a program divergence), so "
                  + who(ahead) + (ahead.size() == 1 ? " is" : " are") + " not the culprit.",
              recommendation(Symptom.CPU_STALL));
        }
        evidence.add(new Evidence("insufficient", List.of(), missing));
        return diagnosis(Verdict.INSUFFICIENT_EVIDENCE, Symptom.UNKNOWN, List.of(), first, 0.3, evidence,
            "The job is stuck in " + label(first) + " but the evidence does not say why: " + missing + ".",
            "Collect more evidence: " + missing + ".");
      }
      Cause cause = roots.stream().flatMap(n -> n.suspects.keySet().stream()).min(Comparator.naturalOrder())
          .orElseThrow();
      List<Node> causal = roots.stream().filter(n -> n.suspects.containsKey(cause)).toList();
      Set<Integer> culprits = new TreeSet<>();
      causal.forEach(n -> culprits.addAll(n.suspects.get(cause)));
      Node primary = causal.get(0);
      if (cause == Cause.MISMATCH) {
        evidence.addAll(mismatches);
      }
      evidence.addAll(describe(primary));
      List<Node> alsoHeld = causal.subList(1, causal.size());
      if (!alsoHeld.isEmpty()) {
        // The same culprits hold up more collectives: one line, not a repeat of the story per collective.
        Set<Integer> waiters = new TreeSet<>();
        alsoHeld.forEach(n -> waiters.addAll(n.in(MemberState.WAITING)));
        String listed = alsoHeld.stream().limit(CASCADE_LISTED).map(this::label)
            .collect(Collectors.joining(", "));
        int more = alsoHeld.size() - CASCADE_LISTED;
        evidence.add(new Evidence("also_held_up", List.copyOf(culprits), capitalize(who(List.copyOf(culprits)))
            + " also hold" + (culprits.size() == 1 ? "s" : "") + " up " + listed
            + (more > 0 ? " and " + more + " more" : "")
            + (waiters.isEmpty() ? "" : ", where " + who(List.copyOf(waiters)) + " wait")));
      }
      for (Node n : roots) {
        if (!causal.contains(n)) {
          evidence.addAll(describe(n));
        }
      }
      List<Node> consequences = nodes.values().stream().filter(n -> !n.isRoot())
          .sorted(Comparator.comparingLong((Node n) -> n.firstCreatedNs).thenComparing(n -> n.group)
              .thenComparingLong(n -> n.seq))
          .toList();
      if (!consequences.isEmpty()) {
        Set<Integer> waiters = new TreeSet<>();
        consequences.forEach(n -> {
          waiters.addAll(n.in(MemberState.WAITING));
          waiters.addAll(n.in(MemberState.ISSUED));
        });
        waiters.removeAll(culprits);
        String listed = consequences.stream().limit(CASCADE_LISTED).map(this::label)
            .collect(Collectors.joining(", "));
        int more = consequences.size() - CASCADE_LISTED;
        evidence.add(new Evidence("cascade", List.copyOf(waiters), consequences.size()
            + " other collective" + (consequences.size() == 1 ? "" : "s") + " (" + listed
            + (more > 0 ? " and " + more + " more" : "") + ") wait only because some of their members are stuck "
            + "behind the root cause" + (waiters.isEmpty() ? ""
                : "; " + who(List.copyOf(waiters)) + " wait there as a consequence")));
      }
      if (!silent.isEmpty()) {
        evidence.add(new Evidence("no_snapshot", silent, "no fresh snapshot from ranks " + compact(silent)));
      }
      evidence.addAll(jobEvidence);
      List<Integer> culpritList = List.copyOf(culprits);
      double confidence = confidence(cause, culpritList, primary);
      return diagnosis(Verdict.HANG, cause.symptom, culpritList, primary, confidence, evidence,
          headline(cause, culpritList, primary), recommendation(cause.symptom));
    }

    private double confidence(Cause cause, List<Integer> culprits, Node primary) {
      return switch (cause) {
        case MISMATCH -> culprits.size() < primary.states.size() ? 0.95 : 0.6;
        case DEAD -> culprits.stream().allMatch(c -> ranks.get(c) != null
            && ranks.get(c).evidence.liveness() == Liveness.LOST) ? 0.95 : 0.7;
        case DEVICE_ERROR -> 0.95;
        case CPU -> 0.9;
        case GPU -> primary.in(MemberState.WAITING).isEmpty() ? 0.7 : 0.85;
        case NO_EVIDENCE -> 0.6;
        case WATCHDOG -> 0.6;
        case FABRIC -> 0.6;
      };
    }

    private List<Evidence> describe(Node n) {
      List<Evidence> out = new ArrayList<>();
      String what = label(n);
      List<Integer> notIssued = n.in(MemberState.NOT_ISSUED);
      List<Integer> issued = n.in(MemberState.ISSUED);
      List<Integer> waiting = n.in(MemberState.WAITING);
      List<Integer> done = n.in(MemberState.DONE);
      List<Integer> unknown = n.in(MemberState.UNKNOWN);
      Set<Integer> dead = new TreeSet<>(n.suspects.getOrDefault(Cause.DEAD, Set.of()));
      dead.addAll(n.suspects.getOrDefault(Cause.NO_EVIDENCE, Set.of()));
      for (int rank : dead) {
        RankIndex r = ranks.get(rank);
        String why = r == null ? "sent no evidence at all"
            : r.evidence.liveness() == Liveness.LOST ? "its stream ended without a goodbye (process or host gone)"
            : r.evidence.liveness() == Liveness.UNRESPONSIVE ? "sent no snapshot: " + r.evidence.missingReason()
                + " (its process is gone or wedged)"
            : "sent no snapshot" + (r.evidence.missingReason().isEmpty() ? "" : ": " + r.evidence.missingReason());
        out.add(new Evidence("rank_lost", List.of(rank), "Rank " + rank + " " + why + " while members of "
            + what + " wait on it"));
      }
      List<Integer> cpu = new ArrayList<>(notIssued);
      cpu.removeAll(dead);
      if (!cpu.isEmpty()) {
        out.add(new Evidence("not_issued", cpu, capitalize(who(cpu)) + " never issued " + what
            + lastIssued(cpu, n)));
      }
      // Only members whose own device is to blame; the others are queued behind their own stuck ops.
      Set<Integer> deviceSuspects = new TreeSet<>(n.suspects.getOrDefault(Cause.GPU, Set.of()));
      deviceSuspects.addAll(n.suspects.getOrDefault(Cause.DEVICE_ERROR, Set.of()));
      List<Integer> gpu = issued.stream().filter(deviceSuspects::contains).toList();
      if (!gpu.isEmpty()) {
        boolean starts = gpu.stream().allMatch(r -> ranks.get(r).recordsStarts);
        String device = gpu.size() == 1 ? "its device" : "their devices";
        out.add(new Evidence(starts ? "not_started" : "completion_lag", gpu, capitalize(who(gpu))
            + " issued " + what + " but " + (starts ? device + " never started it" : "never completed it")
            + (waiting.isEmpty() && done.isEmpty() ? ""
                : " while " + who(union(waiting, done)) + (waiting.isEmpty() ? " completed it"
                    : " started it"))));
      }
      if (!waiting.isEmpty()) {
        String kind = n.suspects.containsKey(Cause.FABRIC) ? "all_started_none_completed" : "waiting";
        out.add(new Evidence(kind, waiting, capitalize(who(waiting)) + " started " + what
            + " and wait" + (waiting.size() == 1 ? "s" : "") + " for it to complete"
            + (kind.equals("all_started_none_completed") ? ": every member started it and none completed" : "")));
      }
      if (n.allIssuedNoneStarted) {
        out.add(new Evidence("all_issued_none_completed", union(issued, waiting),
            "Every member issued " + what + " and none completed it"));
      }
      if (!unknown.isEmpty() && dead.isEmpty()) {
        out.add(new Evidence("no_snapshot", unknown, "No evidence from " + who(unknown)));
      }
      return out;
    }

    private String lastIssued(List<Integer> ranksNotIssued, Node n) {
      if (ranksNotIssued.size() != 1) {
        return "";
      }
      RankIndex r = ranks.get(ranksNotIssued.get(0));
      RankIndex.Track t = r == null ? null : r.tracks.get(n.group);
      if (t == null) {
        return "";
      }
      long last = n.p2p ? t.p2pEnqueued : t.enqueued;
      return last < 0 ? " (it issued nothing on " + n.group.name() + ")"
          : " (its last issued on " + n.group.name() + " is seq " + last + ")";
    }

    private Diagnosis diagnosis(Verdict verdict, Symptom symptom, List<Integer> culprits, Node primary,
        double confidence, List<Evidence> evidence, String headline, String recommendation) {
      List<StuckCollective> stuck = nodes.values().stream()
          .sorted(Comparator.comparing((Node n) -> !n.isRoot()).thenComparingLong(n -> n.firstCreatedNs)
              .thenComparing(n -> n.group).thenComparingLong(n -> n.seq))
          .map(n -> new StuckCollective(ref(n), n.isRoot(), n.in(MemberState.DONE), n.in(MemberState.WAITING),
              n.in(MemberState.ISSUED), n.in(MemberState.NOT_ISSUED), n.in(MemberState.UNKNOWN),
              List.copyOf(n.blockedBy)))
          .toList();
      List<String> hosts = culprits.stream().map(c -> ranks.get(c) == null ? "?" : ranks.get(c).evidence.host())
          .filter(h -> !h.equals("?")).distinct().sorted().toList();
      List<Culprit> details = culprits.stream().map(c -> culprit(c, primary)).toList();
      long since = primary == null || primary.firstCreatedNs == Long.MAX_VALUE ? 0 : primary.firstCreatedNs;
      return new Diagnosis(verdict, symptom, culprits, hosts, primary == null ? null : ref(primary), confidence,
          evidence, details, stuck, rankStates(), headline, recommendation, since);
    }

    private Culprit culprit(int rank, Node primary) {
      RankIndex r = ranks.get(rank);
      if (r == null) {
        return new Culprit(rank, "?", 0, -1, "", List.of());
      }
      String last = r.newest == null ? "" : recordLabel(r.newest);
      CollectiveRecord at = primary == null ? null
          : recordsIn(primary, rank).stream().findFirst().orElse(null);
      CollectiveRecord withStack = at != null && at.getFrameIdsCount() > 0 ? at
          : r.oldestIncomplete != null && r.oldestIncomplete.getFrameIdsCount() > 0 ? r.oldestIncomplete
          : r.newest;
      List<String> stack = new ArrayList<>();
      if (withStack != null) {
        for (int id : withStack.getFrameIdsList()) {
          Frame f = r.evidence.frames().get(id);
          if (f != null) {
            stack.add(f.getName() + " (" + f.getFilename() + ":" + f.getLine() + ")");
          }
        }
      }
      return new Culprit(rank, r.evidence.host(), r.evidence.identity().getPid(),
          r.evidence.identity().getGlobalRank() == rank ? r.evidence.identity().getCudaDevice() : -1, last, stack);
    }

    private List<Diagnosis.RankGroup> rankStates() {
      Map<String, List<Integer>> byState = new TreeMap<>();
      for (int rank = 0; rank < job.worldSize(); rank++) {
        RankIndex r = ranks.get(rank);
        String state;
        if (r == null) {
          state = "no evidence";
        } else if (r.evidence.liveness() == Liveness.LOST) {
          state = "lost";
        } else if (r.oldestIncomplete != null) {
          // Grouped by the kind of group (its description), so a 1,000-rank job prints a few lines, not one
          // per data-parallel replica.
          CollectiveRecord o = r.oldestIncomplete;
          GroupKey key = r.groupsByName.get(o.getProcessGroup());
          ProcessGroup g = key == null ? null : groups.get(key);
          String where = g == null || g.getDesc().isEmpty() ? o.getProcessGroup() : g.getDesc();
          long seq = o.getIsP2P() ? o.getP2PSeq() : o.getCollectiveSeq();
          state = (o.getState() == CollectiveState.STARTED ? "waiting in "
              : r.recordsStarts ? "issued, device not started: " : "issued, not completed: ")
              + o.getOp() + (o.getIsP2P() ? " p2p#" : " #") + seq + " on " + where;
        } else if (r.evidence.isEmpty()) {
          state = "no evidence";
        } else {
          state = "idle (nothing outstanding)";
        }
        byState.computeIfAbsent(state, s -> new ArrayList<>()).add(rank);
      }
      return byState.entrySet().stream().map(e -> new Diagnosis.RankGroup(e.getKey(), e.getValue())).toList();
    }

    private static String recordLabel(CollectiveRecord r) {
      long seq = r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq();
      return r.getProcessGroup() + (r.getIsP2P() ? " p2p#" : "#") + seq + " " + r.getOp() + " ("
          + r.getState().name().toLowerCase() + ")";
    }

    private CollectiveRef ref(Node n) {
      ProcessGroup g = groups.get(n.group);
      CollectiveRecord s = n.sample;
      String op = s == null ? opFromEvents(n) : s.getOp();
      if (n.owner >= 0) {
        // One rank's send/recv: say which pair, since its p2p seq is that rank's own count.
        s = recordsOf(n.owner, n.group, n.seq, true).stream().findFirst().orElse(s);
        op = s == null ? "?" : s.getOp() + " " + n.owner + (s.getOp().equals("recv") ? "<-" : "->") + s.getPeer();
      }
      return new CollectiveRef(n.group.name(), g == null ? "" : g.getDesc(), n.seq, n.p2p, op,
          s == null || s.getCommsId() == 0 ? "" : CommsId.format(s.getCommsId()));
    }

    private long runAhead(Node n) {
      return n.states.keySet().stream().mapToLong(r -> runAheadOf(r, n)).max().orElse(0);
    }

    private long runAheadOf(int rank, Node n) {
      RankIndex r = ranks.get(rank);
      RankIndex.Track t = r == null ? null : r.tracks.get(n.group);
      if (t == null || n.p2p) {
        return 0;
      }
      return Math.max(0, t.enqueued - n.seq);
    }

    /** Without records (watchdog lines only), the op a rank's timeout event names. */
    private String opFromEvents(Node n) {
      for (int rank : n.states.keySet()) {
        RankIndex r = ranks.get(rank);
        if (r == null) {
          continue;
        }
        for (RankEvent e : r.evidence.events()) {
          if (e.getSeq() == n.seq && !e.getOp().isEmpty()) {
            return e.getOp();
          }
        }
      }
      return "collective";
    }

    private String label(Node n) {
      return ref(n).label();
    }

    private String headline(Cause cause, List<Integer> culprits, Node primary) {
      CollectiveRef c = ref(primary);
      String where = c.op() + " (" + c.processGroup() + (c.processGroupDesc().isEmpty() ? ""
          : " " + c.processGroupDesc()) + (c.isP2p() ? ", p2p seq " : ", seq ") + c.seq() + ")";
      String who = "Rank" + plural(culprits) + " " + bare(culprits) + hostsOf(culprits);
      return switch (cause) {
        case CPU -> who + " never issued " + where + " that " + peers(primary, culprits)
            + " wait in: CPU-side stall.";
        case GPU -> who + " issued " + where + " but " + (culprits.size() == 1 ? "its device" : "their devices")
            + " never ran it while " + peers(primary, culprits) + " did: GPU-side stall.";
        case DEVICE_ERROR -> who + " reported a CUDA error and " + (culprits.size() == 1 ? "its" : "their")
            + " device never ran " + where + ": GPU fault.";
        case DEAD -> who + (culprits.size() == 1 ? " is" : " are") + " gone (process or host died) while "
            + peers(primary, culprits) + " wait in " + where + ".";
        case NO_EVIDENCE -> who + " left no usable evidence (no dump, or an unreadable one) while "
            + peers(primary, culprits) + " wait in " + where + ": likely gone (process or host).";
        case MISMATCH -> who + " issued " + where + " with a different operation, size or dtype than "
            + peers(primary, culprits) + ": program bug.";
        case WATCHDOG -> who + ": the framework's watchdog itself is stuck, not the collective " + where + ".";
        case FABRIC -> "Every member started " + where + " and none completed: the network between hosts "
            + "(fabric) is the likely cause; no single rank diverged.";
      };
    }

    private String hostsOf(List<Integer> culprits) {
      List<String> hosts = culprits.stream().map(c -> ranks.get(c) == null ? "?" : ranks.get(c).evidence.host())
          .distinct().sorted().toList();
      return hosts.equals(List.of("?")) ? "" : " (" + String.join(", ", hosts) + ")";
    }

    private static String peers(Node n, List<Integer> culprits) {
      List<Integer> others = n.states.keySet().stream().filter(r -> !culprits.contains(r)).toList();
      return others.isEmpty() ? "its peers" : who(others);
    }
  }

  static String recommendation(Symptom symptom) {
    return switch (symptom) {
      case CPU_STALL -> "Inspect the culprit's Python stack (py-spy dump --pid PID) for what it is blocked on "
          + "instead of the collective: data loading, a lock, I/O, or a code path only some ranks take.";
      case GPU_STALL -> "Check the culprit's GPU (nvidia-smi, dmesg/Xid errors, ECC, out of memory) and drain the "
          + "node if the device is faulty.";
      case DEAD_RANK -> "Find why the process died (its stderr, dmesg for OOM-killer, the host's health) and "
          + "replace the host if it is gone.";
      case MISMATCH -> "Fix the program: the culprit issued a collective that differs from its peers' (op, size, "
          + "dtype or order). Look at the code path that builds this collective's tensors.";
      case FABRIC -> "Check the links between the hosts involved: NCCL WARN lines (status 12 = retry exceeded), "
          + "InfiniBand port counters (link_downed, symbol_error) and switch logs.";
      case NODE_NETWORK -> "Check the culprit host's NICs, GPUDirect RDMA and PCIe (NCCL WARN lines, dmesg).";
      case WATCHDOG_STUCK -> "The watchdog thread is blocked in a CUDA/NCCL call: capture a native stack "
          + "(gdb/py-spy --native) of the culprit.";
      default -> "No action needed.";
    };
  }

  static String compact(List<Integer> ranks) {
    return Ranks.compact(ranks);
  }

  /** "rank 5" or "ranks 4, 6, 7" (runs collapsed). */
  public static String who(List<Integer> ranks) {
    return (ranks.size() == 1 ? "rank " : "ranks ") + bare(ranks);
  }

  /** A rank list for prose: "5" or "0-4, 6-15". */
  private static String bare(List<Integer> ranks) {
    String c = compact(ranks);
    return c.substring(1, c.length() - 1);
  }

  static String capitalize(String s) {
    return s.isEmpty() ? s : Character.toUpperCase(s.charAt(0)) + s.substring(1);
  }

  private static String plural(List<Integer> ranks) {
    return ranks.size() == 1 ? "" : "s";
  }

  private static boolean allCompleted(List<CollectiveRecord> recs) {
    for (CollectiveRecord r : recs) {
      if (r.getState() != CollectiveState.COMPLETED) {
        return false;
      }
    }
    return true;
  }

  private static List<Integer> union(List<Integer> a, List<Integer> b) {
    TreeSet<Integer> s = new TreeSet<>(a);
    s.addAll(b);
    return List.copyOf(s);
  }
}
