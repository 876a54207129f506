package dev.frdiag.readers.pytorch;

import dev.frdiag.proto.RecordedGroups;
import dev.frdiag.proto.v1.ProcessGroup;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The members of process groups whose dumps list none (gloo's recorder in PyTorch 2.13 writes an empty
 * {@code pg_config}), taken from the job's dumps together by {@link RecordedGroups}'s rule. What this cannot see: a
 * member that never recorded the group at all (a rank that stalled before its first op on it, or left no dump).
 */
public final class RecordedMembers {
  private RecordedMembers() {}

  /**
   * {@code dumps} with every group whose members came from records given the members all of them show, each keeping
   * its rank's own local id.
   *
   * @param worldSize the job's world size, for the default group
   */
  public static List<FlightRecorderDump> complete(Collection<FlightRecorderDump> dumps, int worldSize) {
    Map<Integer, List<ProcessGroup>> views = new HashMap<>();
    dumps.forEach(d -> views.put(d.rank(), d.processGroups()));
    Map<String, ProcessGroup> completed = RecordedGroups.complete(views, worldSize);
    if (completed.isEmpty()) {
      return List.copyOf(dumps);
    }
    List<FlightRecorderDump> out = new ArrayList<>(dumps.size());
    for (FlightRecorderDump d : dumps) {
      List<ProcessGroup> groups = new ArrayList<>(d.processGroups().size());
      for (ProcessGroup g : d.processGroups()) {
        groups.add(g.getMembersFromRecords()
            ? completed.get(g.getName()).toBuilder().setLocalId(g.getLocalId()).build() : g);
      }
      out.add(new FlightRecorderDump(d.file(), d.rank(), d.version(), d.commLibVersion(), groups, d.records(),
          d.progress(), d.frames(), d.warnings()));
    }
    return out;
  }
}
