package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One stuck operation: where each member is (fixed when it is found), and what the classifier and the signature
 * check conclude about it (its suspects, and the operations its missing members are blocked in).
 */
final class StuckOp {
  /**
   * Identity of one operation across ranks. {@code owner} is -1, except for a send/recv in a group of more than
   * two ranks, whose p2p seqs are per rank and cannot be matched: there the operation is one rank's op and its peer.
   */
  record Key(GroupKey group, long seq, boolean p2p, int owner) {
    // equals and hashCode written out, for the reason GroupKey gives.
    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && seq == k.seq && p2p == k.p2p && owner == k.owner && group.equals(k.group);
    }

    @Override
    public int hashCode() {
      return ((group.hashCode() * 31 + Long.hashCode(seq)) * 31 + Boolean.hashCode(p2p)) * 31 + owner;
    }
  }

  /** Root causes first, then the oldest first: the order reports list stuck operations in. */
  static final Comparator<StuckOp> ROOTS_FIRST = Comparator.comparing((StuckOp n) -> !n.isRoot())
      .thenComparingLong(n -> n.firstCreatedNs).thenComparing(n -> n.group).thenComparingLong(n -> n.seq);

  final Key key;
  final GroupKey group;
  final long seq;
  final boolean p2p;
  final int owner;
  /** Member → where it is, by rank. */
  final Map<Integer, MemberState> states;
  /** A member's record of it, preferring one with a comms_id; null when no member holds one. */
  final CollectiveRecord sample;
  /** Epoch ns of the earliest member's incomplete record; {@code Long.MAX_VALUE} when unknown. */
  final long firstCreatedNs;
  final CollectiveRef ref;
  private final Map<Cause, Set<Integer>> suspects = new EnumMap<>(Cause.class);
  private final Set<String> blockedBy = new TreeSet<>();
  private final Map<Integer, String> inCall = new TreeMap<>();
  private boolean allIssuedNoneStarted;
  private boolean unseenMember;
  private final Set<Integer> timedOutInside = new TreeSet<>();
  private final Set<Integer> observedBefore = new TreeSet<>();
  private final Set<Integer> finishedPast = new TreeSet<>();

  StuckOp(Key key, Map<Integer, MemberState> states, CollectiveRecord sample, long firstCreatedNs,
      CollectiveRef ref) {
    this.key = key;
    this.group = key.group();
    this.seq = key.seq();
    this.p2p = key.p2p();
    this.owner = key.owner();
    this.states = Collections.unmodifiableMap(states);
    this.sample = sample;
    this.firstCreatedNs = firstCreatedNs;
    this.ref = ref;
  }

  String label() {
    return ref.label();
  }

  /** True when its blockage is explained by its own members rather than by other stuck operations. */
  boolean isRoot() {
    return !suspects.isEmpty();
  }

  void suspect(Cause cause, int rank) {
    suspects.computeIfAbsent(cause, c -> new TreeSet<>()).add(rank);
  }

  /** Every member started it and none completed: the fabric, with no member to blame. */
  void suspectFabric() {
    suspects.put(Cause.FABRIC, new TreeSet<>());
  }

  Set<Cause> causes() {
    return Collections.unmodifiableSet(suspects.keySet());
  }

  boolean suspected(Cause cause) {
    return suspects.containsKey(cause);
  }

  /** The members suspected of {@code cause}, sorted; empty when none. */
  Set<Integer> suspects(Cause cause) {
    return Collections.unmodifiableSet(suspects.getOrDefault(cause, Set.of()));
  }

  void blockedBy(String label) {
    blockedBy.add(label);
  }

  /**
   * Member {@code rank} never issued it because its main thread is inside the torch.distributed call at
   * {@code where} (its stack dump): it waits for peers there, in an op the rings may not record.
   */
  void waitsInCall(int rank, String where) {
    inCall.put(rank, where);
    blockedBy("rank " + rank + " in " + where);
  }

  /** Members that never issued it because they wait inside a torch.distributed call: rank → where. */
  Map<Integer, String> inCall() {
    return Collections.unmodifiableMap(inCall);
  }

  /** Labels of the operations its missing members are stuck in, sorted. */
  Set<String> blockedBy() {
    return Collections.unmodifiableSet(blockedBy);
  }

  /**
   * {@code inside}'s watchdog timed out in it while {@code past} completed it and a later collective of the group:
   * the two disagree on what this collective is, and both are mismatch suspects.
   */
  void disagree(int inside, int past) {
    timedOutInside.add(inside);
    finishedPast.add(past);
    suspect(Cause.MISMATCH, inside);
    suspect(Cause.MISMATCH, past);
  }

  /** Members that timed out inside it while others finished past it ({@link #disagree}), sorted. */
  List<Integer> timedOutInside() {
    return List.copyOf(timedOutInside);
  }

  /** Members that finished past it while others timed out inside it ({@link #disagree}), sorted. */
  List<Integer> finishedPast() {
    return List.copyOf(finishedPast);
  }

  /**
   * Member {@code rank} is shown short of it by evidence taken before its first member issued it: where the rank
   * stands at it is unknown, not "never issued".
   */
  void observedBefore(int rank) {
    observedBefore.add(rank);
  }

  /** Members whose evidence predates its first issue ({@link #observedBefore}), sorted. */
  List<Integer> observedBefore() {
    return List.copyOf(observedBefore);
  }

  /** Every member it shows waits in it, and the member holding it up left no evidence the analysis can name. */
  void unseenMember() {
    unseenMember = true;
  }

  boolean hasUnseenMember() {
    return unseenMember;
  }

  void allIssuedNoneStarted() {
    allIssuedNoneStarted = true;
  }

  boolean isAllIssuedNoneStarted() {
    return allIssuedNoneStarted;
  }

  List<Integer> in(MemberState s) {
    return states.entrySet().stream().filter(e -> e.getValue() == s).map(Map.Entry::getKey).toList();
  }
}
