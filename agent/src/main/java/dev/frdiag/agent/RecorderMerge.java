package dev.frdiag.agent;

import dev.frdiag.agent.controlplane.Recorder;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;

/**
 * One rank's dumps of its several Flight Recorders made one dump, as the daemon takes one ring per rank.
 *
 * <p>The recorders are told apart by process group: each process group's backend records into one recorder
 * (NCCL groups into the NCCL one, gloo groups into the generic one), so a group's entries, seqs and pg_status come
 * from one recorder and are kept as they are. A group name both recorders use (a group created with two backends,
 * such as {@code cpu:gloo,cuda:nccl}) counts two separate seq series; the later recorder's entries of it go under
 * {@code <name>/<backend>}, with the same members, so the two series never pose as one.
 *
 * <p>Each recorder numbers its entries from 0, and the daemon keeps a rank's ring by record id, so merged entries
 * get ids of their own: a new entry the next id in creation-time order, an entry seen before the id it had. A
 * single recorder's dump is passed through as it is.
 *
 * <p>Thread-safe: the poller and the agent's thread may merge at once; {@link #merge} is synchronized.
 */
final class RecorderMerge {
  /** Per recorder, the merged id of each of its record ids still in its ring. */
  private final Map<Recorder, NavigableMap<Long, Long>> ids = new EnumMap<>(Recorder.class);
  private long nextId;

  /**
   * The one dump of {@code dumps} (in the recorders' order); empty dumps join like any other.
   *
   * @param renumber give records merged ids; false when only groups and progress are wanted (progress polls)
   */
  synchronized FlightRecorderDump merge(Map<Recorder, FlightRecorderDump> dumps, boolean renumber) {
    if (dumps.size() == 1) {
      return dumps.values().iterator().next();
    }
    FlightRecorderDump first = null;
    List<ProcessGroup> groups = new ArrayList<>();
    List<ProcessGroupProgress> progress = new ArrayList<>();
    List<CollectiveRecord> records = new ArrayList<>();
    // By identity: two recorders may hold equal-looking entries.
    Map<CollectiveRecord, Recorder> recorderOf = new IdentityHashMap<>();
    Map<Integer, Frame> frames = new HashMap<>();
    List<String> warnings = new ArrayList<>();
    String commLib = "";
    Set<String> earlier = new HashSet<>();
    int frameBase = 0;
    for (Map.Entry<Recorder, FlightRecorderDump> e : dumps.entrySet()) {
      FlightRecorderDump d = e.getValue();
      first = first == null ? d : first;
      commLib = commLib.isEmpty() ? d.commLibVersion() : commLib;
      Set<String> own = namesOf(d);
      Map<String, String> renamed = new HashMap<>();
      for (String name : own) {
        if (earlier.contains(name)) {
          renamed.put(name, name + "/" + backendOf(d, e.getKey()));
        }
      }
      for (ProcessGroup g : d.processGroups()) {
        String name = renamed.get(g.getName());
        if (name == null) {
          groups.add(g);
          continue;
        }
        // A share that lists no members of its own (gloo's) takes those the earlier recorder listed for the group.
        ProcessGroup listed = g.getMembersFromRecords() ? groups.stream()
            .filter(x -> x.getName().equals(g.getName()) && !x.getMembersFromRecords()).findFirst().orElse(null)
            : null;
        groups.add((listed == null ? g : listed).toBuilder().setName(name).setLocalId(g.getLocalId()).build());
      }
      for (ProcessGroup g : List.copyOf(groups)) {
        // A renamed group this recorder does not list takes the members the earlier recorder listed.
        String copy = renamed.get(g.getName());
        if (copy != null && groups.stream().noneMatch(x -> x.getName().equals(copy))) {
          groups.add(g.toBuilder().setName(copy).build());
        }
      }
      for (ProcessGroupProgress p : d.progress()) {
        String name = renamed.get(p.getProcessGroup());
        progress.add(name == null ? p : p.toBuilder().setProcessGroup(name).build());
      }
      int base = frameBase;
      for (CollectiveRecord r : d.records()) {
        CollectiveRecord.Builder b = r.toBuilder();
        String name = renamed.get(r.getProcessGroup());
        if (name != null) {
          b.setProcessGroup(name);
        }
        if (base > 0) {
          b.clearFrameIds();
          r.getFrameIdsList().forEach(id -> b.addFrameIds(id + base));
        }
        CollectiveRecord merged = b.build();
        records.add(merged);
        recorderOf.put(merged, e.getKey());
      }
      int maxFrame = -1;
      for (Map.Entry<Integer, Frame> f : d.frames().entrySet()) {
        frames.put(f.getKey() + base, f.getValue());
        maxFrame = Math.max(maxFrame, f.getKey());
      }
      frameBase = base + maxFrame + 1;
      warnings.addAll(d.warnings());
      earlier.addAll(own);
    }
    if (renumber) {
      records = renumber(records, recorderOf);
    }
    return new FlightRecorderDump(first.file(), first.rank(), first.version(), commLib, groups, records, progress,
        frames, warnings);
  }

  /** Merged ids for {@code records}: those seen before keep theirs, new ones are numbered by creation time. */
  private List<CollectiveRecord> renumber(List<CollectiveRecord> records, Map<CollectiveRecord, Recorder> of) {
    List<CollectiveRecord> fresh = new ArrayList<>();
    Map<Recorder, Long> oldest = new EnumMap<>(Recorder.class);
    for (CollectiveRecord r : records) {
      Recorder k = of.get(r);
      oldest.merge(k, r.getRecordId(), Math::min);
      if (!ids.computeIfAbsent(k, x -> new TreeMap<>()).containsKey(r.getRecordId())) {
        fresh.add(r);
      }
    }
    fresh.sort(Comparator.comparingLong(CollectiveRecord::getTimeCreatedNs)
        .thenComparing(r -> of.get(r)).thenComparingLong(CollectiveRecord::getRecordId));
    for (CollectiveRecord r : fresh) {
      ids.get(of.get(r)).put(r.getRecordId(), nextId++);
    }
    // Entries that left a ring never come back: their ids are forgotten, so memory stays that of the rings.
    ids.forEach((k, m) -> {
      Long low = oldest.get(k);
      if (low == null) {
        m.clear();
      } else {
        m.headMap(low, false).clear();
      }
    });
    List<CollectiveRecord> out = new ArrayList<>(records.size());
    for (CollectiveRecord r : records) {
      out.add(r.toBuilder().setRecordId(ids.get(of.get(r)).get(r.getRecordId())).build());
    }
    out.sort(Comparator.comparingLong(CollectiveRecord::getRecordId));
    return out;
  }

  private static Set<String> namesOf(FlightRecorderDump d) {
    Set<String> names = new HashSet<>();
    d.processGroups().forEach(g -> names.add(g.getName()));
    d.records().forEach(r -> names.add(r.getProcessGroup()));
    d.progress().forEach(p -> names.add(p.getProcessGroup()));
    return names;
  }

  private static String backendOf(FlightRecorderDump d, Recorder recorder) {
    for (CollectiveRecord r : d.records()) {
      if (!r.getBackend().isEmpty()) {
        return r.getBackend();
      }
    }
    return recorder.name().toLowerCase(java.util.Locale.ROOT);
  }
}
