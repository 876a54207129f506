package dev.frdiag.agent;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The members of process groups a rank's dump names but does not list, as far as this node's ranks tell. The
 * generic recorder (gloo) writes no membership at all ({@code pg_config} holds one empty group), so a group's
 * members are taken to be the ranks whose dumps name it, as the groups' names are global. A member that never
 * recorded in the group is missed, and on a job of several nodes each node knows only its own share.
 *
 * <p>Thread-safe: the agent's thread reads dump files and the poller threads worker servers' answers.
 */
final class NodeGroups {
  /** A concurrent map rather than a lock: ranks are polled on several threads, and only ever add. */
  private final Map<String, Set<Integer>> members = new ConcurrentHashMap<>();

  /**
   * {@code dump} with a group for each group name its records or progress use that it does not list, whose
   * members are the ranks seen naming it so far (this one included), and its records' comms ids filled as the
   * reader fills them for listed groups.
   */
  FlightRecorderDump complete(int rank, FlightRecorderDump dump) {
    Set<String> named = new LinkedHashSet<>();
    for (CollectiveRecord r : dump.records()) {
      named.add(r.getProcessGroup());
    }
    for (ProcessGroupProgress p : dump.progress()) {
      named.add(p.getProcessGroup());
    }
    named.remove("");
    for (ProcessGroup g : dump.processGroups()) {
      named.remove(g.getName());
    }
    if (named.isEmpty()) {
      return dump;
    }
    List<ProcessGroup> groups = new ArrayList<>(dump.processGroups());
    Map<String, CommsId.GroupLayout> layouts = new HashMap<>();
    for (String name : named) {
      Set<Integer> seen = members.computeIfAbsent(name, k -> ConcurrentHashMap.newKeySet());
      seen.add(rank);
      int[] ranks = seen.stream().mapToInt(Integer::intValue).sorted().toArray();
      CommsId.GroupLayout layout = CommsId.layoutOf(ranks);
      layouts.put(name, layout);
      ProcessGroup.Builder g = ProcessGroup.newBuilder().setName(name).setGlobalRankStart(layout.start())
          .setGlobalRankStride(layout.stride());
      for (int r : ranks) {
        g.addRanks(r);
      }
      groups.add(g.build());
    }
    List<CollectiveRecord> records = new ArrayList<>(dump.records().size());
    for (CollectiveRecord r : dump.records()) {
      CommsId.GroupLayout layout = layouts.get(r.getProcessGroup());
      records.add(layout == null || r.getCommsId() != 0 ? r : r.toBuilder().setCommsId(CommsId.of(
          r.getProcessGroup(), r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq(), r.getIsP2P(), layout)).build());
    }
    return new FlightRecorderDump(dump.file(), dump.rank(), dump.version(), dump.commLibVersion(), groups, records,
        dump.progress(), dump.frames(), dump.warnings());
  }
}
