package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Where every rank of the job is, ranks in the same situation grouped, for the "where every rank is" section. */
final class RankStates {
  private RankStates() {}

  static List<Diagnosis.RankGroup> of(JobIndex index) {
    // Ordered by label, as reports have always listed them.
    Map<String, List<Integer>> byLabel = new TreeMap<>();
    Map<String, Diagnosis.RankGroup> shapes = new HashMap<>();
    for (int rank = 0; rank < index.job.worldSize(); rank++) {
      RankIndex r = index.rank(rank);
      Diagnosis.State state;
      String at = "";
      ProcessGroupProgress open = r == null ? null : outstanding(r);
      if (r == null) {
        state = Diagnosis.State.NO_EVIDENCE;
      } else if (r.evidence.liveness() == Liveness.LOST) {
        state = Diagnosis.State.LOST;
      } else if (r.oldestIncomplete != null) {
        // Grouped by the kind of group (its description), so a 1,000-rank job prints a few lines, not one
        // per data-parallel replica.
        CollectiveRecord o = r.oldestIncomplete;
        GroupKey key = r.groupsByName.get(o.getProcessGroup());
        ProcessGroup g = key == null ? null : index.groups.get(key);
        String where = g == null || g.getDesc().isEmpty() ? o.getProcessGroup() : g.getDesc();
        long seq = o.getIsP2P() ? o.getP2PSeq() : o.getCollectiveSeq();
        state = o.getState() == CollectiveState.STARTED ? Diagnosis.State.WAITING
            : r.recordsStarts ? Diagnosis.State.NOT_STARTED : Diagnosis.State.NOT_COMPLETED;
        at = o.getOp() + (o.getIsP2P() ? " p2p#" : " #") + seq + " on " + where;
      } else if (r.evidence.isEmpty()) {
        state = Diagnosis.State.NO_EVIDENCE;
      } else if (open != null) {
        // Counters without records (a watchdog status line): the rank is inside the op after its last completed.
        ProcessGroupProgress p = open;
        GroupKey key = r.groupsByName.get(p.getProcessGroup());
        ProcessGroup g = key == null ? null : index.groups.get(key);
        state = Diagnosis.State.NOT_COMPLETED;
        at = "#" + (p.getLastCompletedSeq() + 1) + " on "
            + (g == null || g.getDesc().isEmpty() ? p.getProcessGroup() : g.getDesc());
      } else {
        state = Diagnosis.State.IDLE;
      }
      String label = state.label() + at;
      if (!shapes.containsKey(label)) {
        shapes.put(label, new Diagnosis.RankGroup(state, at, List.of()));
      }
      byLabel.computeIfAbsent(label, l -> new ArrayList<>()).add(rank);
    }
    return byLabel.entrySet().stream().map(e -> {
      Diagnosis.RankGroup shape = shapes.get(e.getKey());
      return new Diagnosis.RankGroup(shape.state(), shape.at(), e.getValue());
    }).toList();
  }

  /** The first group in which the rank enqueued collectives it did not complete, by its counters; or null. */
  private static ProcessGroupProgress outstanding(RankIndex r) {
    return r.evidence.progress().stream().filter(p -> p.getLastEnqueuedSeq() > p.getLastCompletedSeq())
        .findFirst().orElse(null);
  }
}
