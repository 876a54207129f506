package dev.frdiag.proto;

import dev.frdiag.proto.v1.ProcessGroup;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * What a group flagged {@code members_from_records} is once every rank's view of it is known. Such a group (gloo's
 * Flight Recorder in PyTorch 2.13 writes no membership) is listed by each rank with the members it can vouch for,
 * itself at least; the group is its name, since PyTorch names groups by counting {@code new_group} calls made on
 * every rank in the same order, and its members are the union of what the views list. The default group
 * ({@code default_pg}) spans the world, as {@code init_process_group} makes it. One rule for a folder of dumps and
 * for ranks streaming from several nodes, whose agents each see their own share.
 */
public final class RecordedGroups {
  /** The desc PyTorch gives the group {@code init_process_group} makes over every rank. */
  private static final String DEFAULT_PG = "default_pg";

  private RecordedGroups() {}

  /**
   * The completed group for each name some rank lists with {@code members_from_records}, with its members' layout.
   *
   * @param views each rank's groups, by rank
   * @param worldSize the job's world size, for the default group; 0 when unknown
   */
  public static Map<String, ProcessGroup> complete(Map<Integer, ? extends Collection<ProcessGroup>> views,
      int worldSize) {
    Map<String, TreeSet<Integer>> members = new HashMap<>();
    Map<String, ProcessGroup> first = new HashMap<>();
    views.forEach((rank, groups) -> {
      for (ProcessGroup g : groups) {
        if (g.getMembersFromRecords()) {
          TreeSet<Integer> m = members.computeIfAbsent(g.getName(), n -> new TreeSet<>());
          m.add(rank);
          m.addAll(g.getRanksList());
          first.putIfAbsent(g.getName(), g);
        }
      }
    });
    Map<String, ProcessGroup> out = new HashMap<>();
    members.forEach((name, ranks) -> {
      ProcessGroup g = first.get(name);
      ProcessGroup.Builder b = g.toBuilder().clearRanks().clearLocalId();
      if (g.getDesc().equals(DEFAULT_PG)) {
        for (int r = 0; r < Math.max(worldSize, ranks.last() + 1); r++) {
          b.addRanks(r);
        }
      } else {
        b.addAllRanks(ranks);
      }
      out.put(name, CommsId.withLayout(b.build()));
    });
    return out;
  }
}
