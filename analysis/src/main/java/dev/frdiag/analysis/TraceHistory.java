package dev.frdiag.analysis;

import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;

/**
 * When a hang's evidence and profiler traces of the same job are both at hand: what the traces show of the stuck
 * collective's process group before it hung (its collectives there, whether the stuck seq itself is among them and
 * who issued it, and whether a rank already arrived late at them), added to the hang's diagnosis as
 * {@code trace_history} evidence, with the group's lateness figures for the report's picture. Pure.
 */
public final class TraceHistory {
  private TraceHistory() {}

  /** {@code hang} with what {@code traces} show of its stuck collective's group; unchanged when it names none. */
  public static Diagnosis attach(Diagnosis hang, TimelineEvidence traces) {
    CollectiveRef ref = hang.collective();
    if (ref == null) {
      return hang;
    }
    List<RankTimeline> ofGroup = new ArrayList<>();
    TreeSet<Integer> withGroup = new TreeSet<>();
    boolean seqs = true;
    for (RankTimeline r : traces.ranks()) {
      List<CollectiveTiming> mine = r.collectives().stream()
          .filter(c -> c.group().equals(ref.processGroup()) && c.p2p() == ref.isP2p()).toList();
      if (!mine.isEmpty()) {
        withGroup.add(r.rank());
        seqs &= mine.stream().allMatch(c -> c.seq() >= 0);
        ofGroup.add(new RankTimeline(r.rank(), r.host(), mine, Overlap.UNKNOWN));
      }
    }
    String name = "group " + ref.processGroup() + (ref.processGroupDesc().isEmpty() ? ""
        : " (" + ref.processGroupDesc() + ")");
    List<Evidence> lines = new ArrayList<>();
    if (ofGroup.isEmpty()) {
      lines.add(new Evidence(Evidence.Kind.TRACE_HISTORY, List.of(), "The profiler traces of "
          + Wording.who(traces.ranks().stream().map(RankTimeline::rank).toList()) + " hold no collective of "
          + name + ", where the hang sits"));
      return hang.withEvidence(lines);
    }
    long first = Long.MAX_VALUE;
    long last = 0;
    int count = 0;
    for (RankTimeline r : ofGroup) {
      for (CollectiveTiming c : r.collectives()) {
        long t = c.issuedNs() != 0 ? c.issuedNs() : c.startNs();
        first = Math.min(first, t);
        last = Math.max(last, t);
      }
      count = Math.max(count, r.collectives().size());
    }
    String when = hang.stuckSinceNs() > 0 && hang.stuckSinceNs() >= last
        ? String.format(Locale.ROOT, ", the last %.1f s before the stuck op was first issued",
        (hang.stuckSinceNs() - last) / 1e9) : "";
    lines.add(new Evidence(Evidence.Kind.TRACE_HISTORY, List.copyOf(withGroup), "The profiler traces of "
        + Wording.who(List.copyOf(withGroup)) + " show " + count + " collectives of " + name + " over "
        + String.format(Locale.ROOT, "%.1f s", (last - first) / 1e9) + when + (seqs ? "" : "; they carry no "
        + "Seq, so they are joined by order and the stuck seq cannot be looked up in them")));
    if (seqs) {
      lines.add(stuckSeq(ref, ofGroup, traces));
    }
    Diagnosis group = StragglerAnalyzer.analyze(new TimelineEvidence(traces.jobId(), ofGroup,
        traces.source() + " (" + name + ")", traces.deviceStarts()));
    if (group.verdict() == Verdict.SLOW) {
      lines.add(new Evidence(Evidence.Kind.TRACE_HISTORY, group.culpritRanks(), "Before the hang, "
          + Wording.who(group.culpritRanks()) + " already arrived last at the collectives of " + name + " in the "
          + "traces: " + group.headline()));
    } else if (group.verdict() == Verdict.NO_HANG) {
      lines.add(new Evidence(Evidence.Kind.TRACE_HISTORY, List.of(), "Before the hang, no rank arrived late "
          + "consistently at the collectives of " + name + " in the traces"));
    }
    return hang.withEvidence(lines).withLateness(group.lateness());
  }

  /** Who the traces show issuing the stuck seq itself, and whose trace ends before it. */
  private static Evidence stuckSeq(CollectiveRef ref, List<RankTimeline> ofGroup, TimelineEvidence traces) {
    List<Integer> issued = new ArrayList<>();
    List<Integer> before = new ArrayList<>();
    for (RankTimeline r : ofGroup) {
      if (r.collectives().stream().anyMatch(c -> c.seq() == ref.seq())) {
        issued.add(r.rank());
      } else {
        before.add(r.rank());
      }
    }
    String label = ref.label();
    if (issued.isEmpty()) {
      return new Evidence(Evidence.Kind.TRACE_HISTORY, List.of(), "No trace reaches " + label + ": they end "
          + "before it (profiler windows end before a hang)");
    }
    return new Evidence(Evidence.Kind.TRACE_HISTORY, issued, "In the traces, " + Wording.who(issued) + " issued "
        + label + (before.isEmpty() ? "" : "; the traces of " + Wording.who(before) + " end before it"));
  }
}
