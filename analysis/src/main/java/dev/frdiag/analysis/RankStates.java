package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Where every rank of the job is, ranks in the same situation grouped, for the "where every rank is" section. */
final class RankStates {
  private RankStates() {}

  static List<Diagnosis.RankGroup> of(JobIndex index) {
    Map<String, List<Integer>> byState = new TreeMap<>();
    for (int rank = 0; rank < index.job.worldSize(); rank++) {
      RankIndex r = index.ranks.get(rank);
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
        ProcessGroup g = key == null ? null : index.groups.get(key);
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
}
