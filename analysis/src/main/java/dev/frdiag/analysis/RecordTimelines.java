package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroup;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The ranks' records as the straggler analysis reads them: what the daemon receives live from SDK ranks (issue,
 * device start and completion times) and from agent-fed PyTorch ranks (the recorder's {@code time_created_ns};
 * gloo discovers no start), over a window.
 */
public final class RecordTimelines {
  private RecordTimelines() {}

  /**
   * Every rank's collectives issued at or after {@code sinceNs} (epoch ns), one per (group, seq, kind): a coalesced
   * group's records count once, by its first.
   */
  public static TimelineEvidence of(JobEvidence job, long sinceNs) {
    List<RankTimeline> ranks = new ArrayList<>();
    boolean starts = false;
    for (RankEvidence r : job.ranks()) {
      Map<String, List<Integer>> members = new HashMap<>();
      Set<String> partial = new HashSet<>();
      for (ProcessGroup g : r.groups()) {
        // A group whose members came from records lists only this rank: its name is its identity (§2), and a
        // comms_id computed from that partial list differs from rank to rank, so it checks nothing.
        members.put(g.getName(), g.getMembersFromRecords() ? List.of() : g.getRanksList());
        if (g.getMembersFromRecords()) {
          partial.add(g.getName());
        }
      }
      Set<String> seen = new HashSet<>();
      List<CollectiveTiming> timings = new ArrayList<>();
      for (CollectiveRecord c : r.records()) {
        if (c.getTimeCreatedNs() < sinceNs || c.getTimeCreatedNs() <= 0 || c.getOp().equals("coalesced")) {
          continue;
        }
        long seq = c.getIsP2P() ? c.getP2PSeq() : c.getCollectiveSeq();
        if (!seen.add(c.getProcessGroup() + "\u0000" + c.getIsP2P() + "\u0000" + seq)) {
          continue;
        }
        starts |= c.getTimeStartedNs() > 0;
        long bytes = Math.max(CollectiveMatch.numel(c.getInputSizesList()) * elementSize(c.getInputDtypesList()),
            CollectiveMatch.numel(c.getOutputSizesList()) * elementSize(c.getOutputDtypesList()));
        timings.add(new CollectiveTiming(c.getProcessGroup(), members.getOrDefault(c.getProcessGroup(), List.of()),
            seq, c.getIsP2P(), c.getCommsId(), c.getCommsId() != 0 && !partial.contains(c.getProcessGroup()),
            c.getOp(), bytes, c.getTimeCreatedNs(),
            c.getTimeStartedNs(), c.getTimeCompletedNs()));
      }
      ranks.add(new RankTimeline(r.rank(), r.identity().getHostname(), timings, Overlap.UNKNOWN));
    }
    return new TimelineEvidence(job.jobId(), ranks, "the ranks' records", starts);
  }

  private static int elementSize(List<String> dtypes) {
    return dtypes.isEmpty() ? 0 : elementSize(dtypes.get(0));
  }

  /** Bytes per element of PyTorch's dtype names ("Float", "BFloat16", "c10::Half"); 0 when unknown. */
  public static int elementSize(String dtype) {
    String d = dtype.toLowerCase(Locale.ROOT);
    int colon = d.lastIndexOf(':');
    d = colon < 0 ? d : d.substring(colon + 1);
    return switch (d) {
      case "double", "long", "int64", "float64", "complexfloat", "uint64" -> 8;
      case "float", "int", "int32", "float32", "uint32" -> 4;
      case "half", "bfloat16", "short", "int16", "float16", "uint16" -> 2;
      case "byte", "char", "bool", "int8", "uint8", "float8_e4m3fn", "float8_e5m2" -> 1;
      case "complexdouble" -> 16;
      default -> 0;
    };
  }
}
