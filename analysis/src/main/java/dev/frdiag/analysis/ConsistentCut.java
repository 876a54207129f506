package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.RankEvent;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The consistent cut (DIAGNOSIS.md §3): which members shown short of a collective were only observed before it
 * completed, each rank's evidence being taken at its own moment. Asked once per collective; the members so explained
 * are kept as {@code earlier_cut} evidence lines. Not thread-safe: one analysis asks it.
 */
final class ConsistentCut {
  private final JobIndex index;
  private final Rhythm rhythm;
  private final List<Evidence> earlierCuts = new ArrayList<>();
  /** Each collective {@link #cutShort} was asked about, and its answer. */
  private final Map<StuckOp.Key, Boolean> answers = new HashMap<>();

  ConsistentCut(JobIndex index, Rhythm rhythm) {
    this.index = index;
    this.rhythm = rhythm;
  }

  /** The members whose evidence predates a completion their peers show, as evidence lines; at most a few. */
  List<Evidence> earlierCuts() {
    return Collections.unmodifiableList(earlierCuts);
  }

  /**
   * {@link #completedElsewhere}, asked once per collective: a rank's own oldest incomplete record of a collective a
   * peer completed is where its evidence was cut, not where it waits (MemberClassifier).
   */
  boolean cutShort(GroupKey g, long seq) {
    return answers.computeIfAbsent(new StuckOp.Key(g, seq, false, -1), k -> completedElsewhere(g, seq));
  }

  /**
   * Whether a member completed collective (g, seq), one that ends on a member only once every member joined it, while
   * each member shown short of it was observed before its last member issued it (so before it could complete), or
   * within the group's rhythm of its first issue: evidence taken a moment before the completion (§3, "A consistent
   * cut"). A member shown short of it long after it was issued, or at an unknown time, is not explained by the
   * moment of its dump, and neither is a member whose own watchdog timed out in it (the members disagree on what seq
   * is, §4). Noted in {@link #earlierCuts} for the members shown short of it.
   */
  private boolean completedElsewhere(GroupKey g, long seq) {
    List<Integer> completed = new ArrayList<>();
    List<Integer> retired = new ArrayList<>();
    List<Integer> shortOfIt = new ArrayList<>();
    String op = null;
    for (int member : index.members.get(g)) {
      RankIndex r = index.rank(member);
      if (r == null) {
        continue;
      }
      List<CollectiveRecord> recs = index.recordsOf(member, g, seq, false);
      if (!recs.isEmpty()) {
        op = recs.get(0).getOp();
      }
      if (r.evidence.events().stream().anyMatch(e -> e.getKind() == RankEvent.Kind.WATCHDOG_TIMEOUT
          && e.getSeq() == seq && e.getProcessGroup().equals(g.name()))) {
        return false;
      }
      if (completedBy(r, recs)) {
        completed.add(member);
      } else if (retiredNotFailed(r, g, recs)) {
        retired.add(member);
      } else if (!r.evidence.isEmpty()) {
        shortOfIt.add(member);
      }
    }
    if (completed.isEmpty() || op == null || !CollectiveJoin.needsEveryMember(op)) {
      return false;
    }
    // It ended on a member only once every member had joined it: a member that retired it, its own status reporting
    // no failure, completed it too.
    completed.addAll(retired);
    long firstIssued = Long.MAX_VALUE;
    long lastIssued = 0;
    for (int member : index.members.get(g)) {
      for (CollectiveRecord rec : index.recordsOf(member, g, seq, false)) {
        if (rec.getTimeCreatedNs() > 0) {
          firstIssued = Math.min(firstIssued, rec.getTimeCreatedNs());
          lastIssued = Math.max(lastIssued, rec.getTimeCreatedNs());
        }
      }
    }
    long within = Rhythm.WAIT_RHYTHMS * rhythm.interval(g);
    for (int member : shortOfIt) {
      long observed = index.rank(member).evidence.observedAtNs();
      // Taken before the last member issued it, the evidence predates the completion, which cannot come sooner; a
      // file is written a little after its content is taken, so within one of the group's intervals of that issue
      // it cannot say which came first either.
      boolean beforeItCouldComplete = observed > 0 && observed < lastIssued + rhythm.interval(g);
      boolean withinRhythm = observed > 0 && firstIssued != Long.MAX_VALUE && within > 0
          && observed - firstIssued < within;
      if (!beforeItCouldComplete && !withinRhythm) {
        return false;
      }
    }
    if (earlierCuts.size() < MAX_EARLIER_CUTS && !shortOfIt.isEmpty()) {
      earlierCuts.add(new Evidence(Evidence.Kind.EARLIER_CUT, shortOfIt, Wording.capitalize(Wording.who(shortOfIt))
          + (shortOfIt.size() == 1 ? " shows " : " show ") + g.name() + "#" + seq + " " + op + " not completed, which "
          + Wording.who(completed) + " completed: an " + op + " ends on a member only once every member joined it, "
          + "so " + (shortOfIt.size() == 1 ? "its" : "their") + " evidence was taken before it completed"));
    }
    return true;
  }

  /** Evidence lines about members observed before a completion, at most. */
  static final int MAX_EARLIER_CUTS = 3;

  /**
   * Whether {@code recs}, one rank's records of one collective, completed: completed, or (gloo, which records no
   * completion) retired with a later record of the rank after them: a failed gloo collective raises, and the rank's
   * program issues nothing after it.
   */
  static boolean completedBy(RankIndex r, List<CollectiveRecord> recs) {
    if (recs.isEmpty()) {
      return false;
    }
    for (CollectiveRecord rec : recs) {
      if (!Completion.ended(rec)) {
        return false;
      }
    }
    CollectiveRecord last = recs.get(recs.size() - 1);
    return last.getState() == CollectiveState.COMPLETED || StuckOperations.wentOnFrom(r, last);
  }

  /**
   * Whether {@code recs}, one rank's gloo records of one collective of {@code g}, all left the work list with nothing
   * of the rank after them and its status not reporting them failed ({@link RankIndex.Track#retiredFailed}):
   * completed or failed, the records alone cannot say.
   */
  private static boolean retiredNotFailed(RankIndex r, GroupKey g, List<CollectiveRecord> recs) {
    RankIndex.Track t = r.tracks.get(g);
    return !recs.isEmpty() && t != null
        && recs.stream().allMatch(rec -> Completion.retiredUnknown(rec) && !t.retiredFailed(rec));
  }
}
