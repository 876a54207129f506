package dev.frdiag.readers.pytorch;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Puts PyTorch's per-group status where the wire contract wants it. pg_status counts "the last work" of either
 * kind in one field, so a group used for sends and recvs reports P2P seqs as if they were collective seqs; which
 * kind a group's numbers are is told by comparing them with the seqs the group's records show. The more dumps
 * (ranks) are given, the more groups have records to compare with.
 */
public final class PgStatus {
  private PgStatus() {}

  /** Per group (name + members), the largest collective and P2P seqs any of {@code dumps} recorded. */
  public static SeqRanges seqRanges(Collection<FlightRecorderDump> dumps) {
    return seqRanges(dumps, PgStatus::seqsByName);
  }

  /**
   * As {@link #seqRanges(Collection)}, from each dump's {@link #seqsByName}, which a reader may have worked out as
   * each dump arrived (its records are a dump's bulk; its groups may be completed later, so the keys are not).
   */
  public static SeqRanges seqRanges(Collection<FlightRecorderDump> dumps,
      Function<FlightRecorderDump, Map<String, long[]>> seqsByName) {
    Map<List<Object>, long[]> ranges = new HashMap<>();
    for (FlightRecorderDump d : dumps) {
      // By name within the dump first: a key holds the members (thousands for a world group), and comparing it
      // once per record rather than once per group was most of a large folder's cost.
      Map<String, List<Object>> keys = keysOf(d);
      seqsByName.apply(d).forEach((name, range) -> {
        List<Object> key = keys.get(name);
        if (key != null) {
          long[] all = ranges.computeIfAbsent(key, k -> new long[] {-1, -1});
          all[0] = Math.max(all[0], range[0]);
          all[1] = Math.max(all[1], range[1]);
        }
      });
    }
    return new SeqRanges(ranges);
  }

  /** Per group (name + members), the largest collective and P2P seqs (-1 for none) some dumps recorded. */
  public static final class SeqRanges {
    private final Map<List<Object>, long[]> byGroup;

    private SeqRanges(Map<List<Object>, long[]> byGroup) {
      this.byGroup = byGroup;
    }
  }

  /** Per group name, the largest collective and P2P seqs (-1 for none) {@code d}'s records show. */
  public static Map<String, long[]> seqsByName(FlightRecorderDump d) {
    Map<String, long[]> byName = new HashMap<>();
    String lastName = null;
    long[] range = null;
    for (CollectiveRecord r : d.records()) {
      // Records of one group come in runs, and a reader shares the name string between them.
      if (r.getProcessGroup() != lastName) {
        lastName = r.getProcessGroup();
        range = byName.computeIfAbsent(lastName, k -> new long[] {-1, -1});
      }
      if (r.getIsP2P()) {
        range[1] = Math.max(range[1], r.getP2PSeq());
      } else {
        range[0] = Math.max(range[0], r.getCollectiveSeq());
      }
    }
    return byName;
  }

  /** {@code d}'s progress with the groups whose numbers are P2P seqs moved to the P2P fields. */
  public static List<ProcessGroupProgress> normalized(FlightRecorderDump d, SeqRanges seqRanges) {
    List<ProcessGroupProgress> progress = new ArrayList<>(d.progress().size());
    Map<String, List<Object>> keys = keysOf(d);
    for (ProcessGroupProgress p : d.progress()) {
      List<Object> key = keys.get(p.getProcessGroup());
      long[] range = key == null ? null : seqRanges.byGroup.get(key);
      boolean p2p = range != null && range[1] >= 0 && (range[0] < 0
          || Math.abs(p.getLastEnqueuedSeq() - range[1]) < Math.abs(p.getLastEnqueuedSeq() - range[0]));
      progress.add(p2p ? p.toBuilder().setLastEnqueuedSeq(-1).setLastStartedSeq(-1).setLastCompletedSeq(-1)
          .setLastEnqueuedP2PSeq(p.getLastEnqueuedSeq()).setLastCompletedP2PSeq(p.getLastCompletedSeq()).build()
          : p);
    }
    return progress;
  }

  /**
   * Each group's identity across ranks (name and members) by its name in {@code d}. The members are protobuf's
   * list of ints, which hashes and compares its array without boxing: a key spelt out as text was most of what
   * assembling a 512-rank folder's evidence took after the reading (docs/PERFORMANCE.md).
   */
  private static Map<String, List<Object>> keysOf(FlightRecorderDump d) {
    Map<String, List<Object>> keys = new HashMap<>();
    for (ProcessGroup g : d.processGroups()) {
      keys.putIfAbsent(g.getName(), List.of(g.getName(), g.getRanksList()));
    }
    return keys;
  }
}
