package dev.frdiag.readers.pytorch;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.ProcessGroup;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The members of process groups whose dumps list none (gloo's recorder in PyTorch 2.13 writes an empty
 * {@code pg_config}), taken from the job's dumps together: a group's members are the ranks whose records name it,
 * by name, since group names are global (PyTorch counts every {@code new_group} call, made on every rank in the
 * same order) while {@code pg_id} is a per-process index. The default group ({@code default_pg}) spans the world,
 * as {@code init_process_group} makes it. What this cannot see: a member that never recorded the group at all (a
 * rank that stalled before its first op on it, or left no dump).
 */
public final class RecordedMembers {
  /** The desc PyTorch gives the group {@code init_process_group} makes over every rank. */
  static final String DEFAULT_PG = "default_pg";

  private RecordedMembers() {}

  /**
   * {@code dumps} with every group whose members came from records given the members all of them show.
   *
   * @param worldSize the job's world size, for the default group
   */
  public static List<FlightRecorderDump> complete(Collection<FlightRecorderDump> dumps, int worldSize) {
    Map<String, TreeSet<Integer>> members = new TreeMap<>();
    for (FlightRecorderDump d : dumps) {
      for (ProcessGroup g : d.processGroups()) {
        if (g.getMembersFromRecords()) {
          members.computeIfAbsent(g.getName(), n -> new TreeSet<>()).add(d.rank());
        }
      }
    }
    if (members.isEmpty()) {
      return List.copyOf(dumps);
    }
    List<FlightRecorderDump> out = new ArrayList<>(dumps.size());
    for (FlightRecorderDump d : dumps) {
      List<ProcessGroup> groups = new ArrayList<>(d.processGroups().size());
      for (ProcessGroup g : d.processGroups()) {
        if (!g.getMembersFromRecords()) {
          groups.add(g);
          continue;
        }
        ProcessGroup.Builder b = g.toBuilder().clearRanks();
        if (g.getDesc().equals(DEFAULT_PG)) {
          for (int r = 0; r < Math.max(worldSize, members.get(g.getName()).last() + 1); r++) {
            b.addRanks(r);
          }
        } else {
          b.addAllRanks(members.get(g.getName()));
        }
        groups.add(CommsId.withLayout(b.build()));
      }
      out.add(new FlightRecorderDump(d.file(), d.rank(), d.version(), d.commLibVersion(), groups, d.records(),
          d.progress(), d.frames(), d.warnings()));
    }
    return out;
  }
}
