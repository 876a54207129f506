package dev.frdiag.analysis;

import static dev.frdiag.analysis.Wording.capitalize;
import static dev.frdiag.analysis.Wording.who;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a verdict read from one snapshot of rings that record neither time of their own nor every op cannot show,
 * and what that costs its confidence (DIAGNOSIS.md §11). gloo's Flight Recorder is such a ring: its dumps are taken
 * on demand and never on a timeout, its records carry no discovered times, and it records no send/recv.
 */
final class OneSnapshot {
  /** Wait seen in one snapshot from which a CPU stall counts as shown, whatever the steps before. */
  static final long SHOWN_WAIT_NS = 1_000_000_000L;
  /** ... or this many of the group's usual intervals between collectives. */
  static final long SHOWN_WAIT_STEPS = 10;

  private final JobIndex index;
  private final StuckOperations stuck;
  private final Rhythm rhythm;

  OneSnapshot(JobIndex index, StuckOperations stuck, Rhythm rhythm) {
    this.index = index;
    this.stuck = stuck;
    this.rhythm = rhythm;
  }

  /** Ops that the members' op_id gaps show and no ring records, on some groups. */
  private record Unrecorded(Set<String> groups, long ops) {
    String where() {
      return "group" + (groups.size() == 1 ? " " : "s ") + String.join(", ", groups);
    }
  }

  /**
   * How sure a CPU stall read from one snapshot can be, with the evidence lines that say why. A culprit with
   * nothing outstanding, on a group whose rings show unrecorded ops, may be blocked in one of them (a send/recv
   * gloo does not record): 0.5, unless its Python stack was read. Offline, on a backend whose dumps are taken on
   * demand and never on a timeout, nothing dates the snapshot: unless the op failed (the peers' wait ended in an
   * error) or the job's newest record is long after the peers issued it, a dump taken during a momentary lag looks
   * the same: 0.7; 0.4 when the dumps' write times date them but they hold symbolized stacks, whose writing lags
   * their content by seconds.
   */
  double cpuStall(StuckOp primary, List<Integer> culprits, List<Evidence> evidence) {
    double sure = 0.9;
    // A culprit whose stack was read is where the stack says, outside torch.distributed (else it would not be a
    // culprit, §12): in no unrecorded send/recv. One moment is still one moment: the snapshot's age still counts.
    List<Integer> idle = culprits.stream()
        .filter(c -> index.rank(c) != null && index.rank(c).oldestIncomplete == null)
        .filter(c -> PythonStacks.MainThread.of(index.rank(c).evidence).isEmpty()).toList();
    Set<GroupKey> theirs = new TreeSet<>();
    idle.forEach(c -> theirs.addAll(index.rank(c).tracks.keySet()));
    Unrecorded hidden = unrecorded(theirs);
    if (hidden.ops() > 0) {
      evidence.add(new Evidence(Evidence.Kind.UNRECORDED_OPS, idle, capitalize(who(idle)) + " had nothing "
          + "outstanding, but op_id gaps show " + hidden.ops() + " op" + (hidden.ops() == 1 ? "" : "s") + " on "
          + hidden.where() + " that no ring records (gloo's Flight Recorder records no send/recv): "
          + (idle.size() == 1 ? "it" : "any of them") + " may be blocked in one, held up by a peer; the ranks' "
          + "stacks (dump_traceback) tell"));
      sure = 0.5;
    }
    // Live, an op is stuck only once the daemon has watched it wait the stall threshold (StuckOperations): the wait
    // is observed, not read off one snapshot.
    if (!index.job.offline() || primary.sample == null || !Completion.statesNeverAdvance(primary.sample)
        || failed(primary)) {
      return sure;
    }
    long newest = index.ranks.values().stream().filter(r -> r.newest != null)
        .mapToLong(r -> r.newest.getTimeCreatedNs()).max().orElse(0);
    long waited = newest - primary.firstCreatedNs;
    long step = rhythm.interval(primary.group);
    if (primary.firstCreatedNs == Long.MAX_VALUE || waited < Math.max(SHOWN_WAIT_NS, SHOWN_WAIT_STEPS * step)) {
      evidence.add(new Evidence(Evidence.Kind.SNAPSHOT_AGE, culprits, String.format(Locale.ROOT,
          "The peers issued %s %.1f ms before the newest record of the job%s; a gloo dump holds no time of its "
              + "own and is never written on a timeout, so this one snapshot cannot show how long they have "
              + "waited: a second dump seconds later that shows the same would", primary.label(),
          Math.max(0, waited) / 1e6, step > 0 ? String.format(Locale.ROOT,
              " (its collectives came every %.1f ms before)", step / 1e6) : "")));
      sure = Math.min(sure, 0.7);
      if (index.ranks.values().stream().anyMatch(r -> r.evidence.observedAtNs() > 0
          && !r.evidence.frames().isEmpty())) {
        // A dump with symbolized stacks is written seconds after its content is taken (torch symbolizes the frames
        // in between): its write time, which says the peers' wait was long, may be that much too late.
        evidence.add(new Evidence(Evidence.Kind.SNAPSHOT_AGE, culprits, "These dumps hold symbolized stacks, "
            + "which take seconds to write: their write times may be that much later than what they show, so they "
            + "cannot tell a wait of seconds from a moment; a dump without stacks (the JSON one) dates itself"));
        sure = Math.min(sure, 0.4);
      }
    }
    return sure;
  }

  /**
   * The {@code snapshot_age} line of the longest wait, when every operation that looks stuck was observed waiting for
   * less than {@link Rhythm#WAIT_RHYTHMS} of its group's usual intervals (DIAGNOSIS.md §3, "The job's rhythm"); null
   * when some wait is longer or unknown.
   */
  Evidence withinRhythm() {
    StuckOp longest = null;
    long longestWait = -1;
    for (StuckOp n : stuck.all()) {
      long wait = rhythm.waitSeen(n, stuck);
      long interval = rhythm.interval(n.group);
      if (wait < 0 || interval <= 0 || wait >= Rhythm.WAIT_RHYTHMS * interval) {
        return null;
      }
      if (wait > longestWait) {
        longestWait = wait;
        longest = n;
      }
    }
    if (longest == null) {
      return null;
    }
    return new Evidence(Evidence.Kind.SNAPSHOT_AGE, longest.in(MemberState.WAITING).isEmpty()
        ? longest.in(MemberState.ISSUED) : longest.in(MemberState.WAITING), String.format(Locale.ROOT,
        "The longest wait the evidence shows is %.1f ms, in %s, when its collectives come every %.1f ms: every wait "
            + "seen is within %d of its group's usual intervals, the job's own rhythm", longestWait / 1e6,
        longest.label(), rhythm.interval(longest.group) / 1e6, Rhythm.WAIT_RHYTHMS));
  }

  /**
   * How sure a NO_HANG at {@code sure} stays: everyone idle is also how ranks blocked in unrecorded send/recv look,
   * so no progress is shown for those (at most 0.5, with the line that says why).
   */
  double noHang(double sure, List<Evidence> evidence) {
    Unrecorded hidden = unrecorded(index.members.keySet());
    if (hidden.ops() == 0) {
      return sure;
    }
    evidence.add(new Evidence(Evidence.Kind.UNRECORDED_OPS, List.of(), "Op_id gaps show " + hidden.ops()
        + " ops on " + hidden.where() + " that no ring records (gloo's Flight Recorder records no send/recv): "
        + "ranks blocked in one would look as idle as these"));
    return Math.min(sure, 0.5);
  }

  /** The ops no ring records on {@code groups}: per group, the most any member's op_id gaps show. */
  private Unrecorded unrecorded(Collection<GroupKey> groups) {
    Set<String> names = new TreeSet<>();
    long ops = 0;
    for (GroupKey g : groups) {
      long most = index.members.getOrDefault(g, List.of()).stream().map(m -> index.track(m, g))
          .filter(t -> t != null).mapToLong(t -> t.unrecordedOps).max().orElse(0);
      if (most > 0) {
        names.add("'" + g.name() + "'");
        ops += most;
      }
    }
    return new Unrecorded(names, ops);
  }

  /** Whether some member's records of {@code op} were retired without completing: its wait ended in an error. */
  private boolean failed(StuckOp op) {
    return op.states.keySet().stream().anyMatch(m -> stuck.recordsIn(op, m).stream()
        .anyMatch(Completion::retiredUnknown));
  }
}
