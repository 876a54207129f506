package dev.frdiag.evidence;

import dev.frdiag.analysis.CollectiveTiming;
import dev.frdiag.analysis.Overlap;
import dev.frdiag.analysis.RankTimeline;
import dev.frdiag.analysis.RecordTimelines;
import dev.frdiag.analysis.TimelineEvidence;
import dev.frdiag.readers.kineto.KinetoTrace;
import dev.frdiag.readers.kineto.RankTrace;
import dev.frdiag.readers.kineto.TraceCollective;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Profiler traces turned into the timelines the straggler analysis reads: each rank's collectives and the overlap
 * of its device's kernels. A trace's kernel intervals are reduced to their overlap as soon as its file is read, so
 * only the collectives of many large traces are ever held at once.
 */
final class TraceTimelines {
  private final Map<Integer, RankTimeline> ranks = new TreeMap<>();
  private final List<String> problems = new ArrayList<>();
  private boolean deviceStarts;
  private int files;

  /** One file's ranks, as the straggler analysis reads them; called on the thread that read the file. */
  static List<RankTimeline> of(KinetoTrace trace) {
    List<RankTimeline> out = new ArrayList<>();
    for (RankTrace r : trace.ranks()) {
      List<CollectiveTiming> timings = new ArrayList<>(r.collectives().size());
      for (TraceCollective c : r.collectives()) {
        if (c.issuedNs() == 0 && c.startNs() == 0) {
          continue;
        }
        timings.add(new CollectiveTiming(c.group().name(), c.group().ranks(), c.seq(), c.p2p(), c.commsId(),
            c.hasCommsId(), c.op(), c.elements() * RecordTimelines.elementSize(c.dtype()), c.issuedNs(), c.startNs(), c.endNs()));
      }
      out.add(new RankTimeline(r.rank(), r.host(), timings, Overlap.of(r.compute(), r.communication())));
    }
    return out;
  }

  /**
   * Adds a file's ranks; a rank already read from another file keeps that file's timeline.
   *
   * @param device whether the file's collectives started on a device (kernels) rather than a CPU thread
   */
  void add(KinetoTrace trace, List<RankTimeline> timelines, boolean device) {
    files++;
    deviceStarts |= device;
    for (RankTimeline t : timelines) {
      if (ranks.putIfAbsent(t.rank(), t) != null) {
        problems.add(trace.file() + ": rank " + t.rank() + " was already read from another trace; skipped");
      }
    }
    for (String note : trace.notes()) {
      problems.add(trace.file() + ": " + note);
    }
  }

  /** What was noticed while adding: said once every file is read. */
  List<String> problems() {
    return problems;
  }

  int files() {
    return files;
  }

  /** The timelines of every rank read; empty when no trace was. */
  Optional<TimelineEvidence> build(String job) {
    if (ranks.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new TimelineEvidence(job, List.copyOf(ranks.values()), "profiler traces", deviceStarts));
  }
}
