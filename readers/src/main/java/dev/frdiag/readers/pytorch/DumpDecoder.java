package dev.frdiag.readers.pytorch;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.Shape;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Turns the decoded value tree of one dump (from the pickle or the JSON variant) into a
 * {@link FlightRecorderDump}, checking every key and type it relies on.
 *
 * <p>The tree is what {@link SafeUnpickler} or {@link JsonDumps} produced: maps, lists, tuples as
 * {@code Object[]}, strings, numbers, booleans and null. A pickle can refer to one container many times through
 * its memo, so the decoder counts the values it visits against a budget proportional to the file size: a small
 * file cannot make it build a huge dump.
 */
final class DumpDecoder {
  static final int MAX_WARNINGS = 50;

  // Set.of(...).contains(null) throws: check that a key is a String before looking it up.
  private static final Set<String> TOP_LEVEL_KEYS = Set.of("version", "comm_lib_version", "nccl_version",
      "pg_config", "pg_status", "entries", "nccl_comm_state");
  private static final Set<String> ENTRY_KEYS = Set.of("frames", "record_id", "pg_id", "process_group",
      "thread_name", "thread_id", "collective_seq_id", "seq_id", "p2p_seq_id", "op_id", "profiling_name",
      "time_created_ns", "duration_ms", "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state",
      "time_discovered_started_ns", "time_discovered_completed_ns", "retired", "timeout_ms", "is_p2p");
  private static final Set<String> STATUS_KEYS = Set.of("last_enqueued_collective", "last_started_collective",
      "last_completed_collective");
  private static final Set<String> GROUP_KEYS = Set.of("name", "desc", "ranks");

  private final Path file;
  private final int rank;
  private final boolean json;
  private long budget;

  private final Set<String> warnings = new LinkedHashSet<>();
  private int droppedWarnings;
  private final Map<String, Group> groups = new LinkedHashMap<>();
  private final Map<Long, String> pgIdToName = new TreeMap<>();
  private final Map<Frame, Integer> frameIds = new HashMap<>();
  private final Map<Integer, Frame> frames = new LinkedHashMap<>();
  /** Frame dicts a pickle shares through its memo, decoded once. */
  private final Map<Object, Integer> sharedFrames = new IdentityHashMap<>();
  /**
   * Records holding only the repeated fields entries have had so far. A rank's entries repeat a few stacks,
   * shapes and dtypes thousands of times; sharing one copy of each keeps a large job's dumps in memory at a
   * fraction of their size.
   */
  private final Map<Repeated, CollectiveRecord> templates = new HashMap<>();
  private final Map<String, ProfilingName> profilingNames = new HashMap<>();

  /** The repeated fields of one entry, compared by value. */
  private static final class Repeated {
    final List<Shape> inputSizes;
    final List<Shape> outputSizes;
    final List<String> inputDtypes;
    final List<String> outputDtypes;
    final int[] frameIds;
    private final int hash;

    Repeated(List<Shape> inputSizes, List<Shape> outputSizes, List<String> inputDtypes, List<String> outputDtypes,
        int[] frameIds) {
      this.inputSizes = inputSizes;
      this.outputSizes = outputSizes;
      this.inputDtypes = inputDtypes;
      this.outputDtypes = outputDtypes;
      this.frameIds = frameIds;
      this.hash = Objects.hash(inputSizes, outputSizes, inputDtypes, outputDtypes) * 31 + Arrays.hashCode(frameIds);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Repeated r && hash == r.hash && Arrays.equals(frameIds, r.frameIds)
          && inputSizes.equals(r.inputSizes) && outputSizes.equals(r.outputSizes)
          && inputDtypes.equals(r.inputDtypes) && outputDtypes.equals(r.outputDtypes);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }

  /** A pg_config entry. */
  private record Group(String name, String desc, int[] ranks, CommsId.GroupLayout layout) {
    int groupRankOf(int globalRank) {
      for (int i = 0; i < ranks.length; i++) {
        if (ranks[i] == globalRank) {
          return i;
        }
      }
      return -1;
    }
  }

  /** Where a value sits in the dump; rendered only when a message needs it. */
  private record At(Object parent, Object key) {
    @Override
    public String toString() {
      return parent + (key instanceof Integer i ? "[" + i + "]" : "['" + key + "']");
    }
  }

  /** An entry, named with its record id once that is known. */
  private record EntryAt(int index, long recordId) {
    @Override
    public String toString() {
      return "entries[" + index + "] (record_id " + recordId + ")";
    }
  }

  /** A pg_status entry before its pg_id is matched to a group name. */
  private record Status(long pgId, long enqueued, long started, long completed) {}

  private DumpDecoder(Path file, int rank, boolean json, long budget) {
    this.file = file;
    this.rank = rank;
    this.json = json;
    this.budget = budget;
  }

  /**
   * @param root the decoded top-level value
   * @param json whether it came from the JSON variant (whose pg_status values are strings)
   * @param budget how many values the decoder may visit
   * @throws DumpProblem describing the first problem
   */
  static FlightRecorderDump decode(Object root, Path file, int rank, boolean json, long budget) {
    return new DumpDecoder(file, rank, json, budget).run(root);
  }

  private FlightRecorderDump run(Object root) {
    if (!(root instanceof Map<?, ?> top)) {
      throw new DumpProblem("not a Flight Recorder dump: the top level is " + describe(root) + ", expected a dict");
    }
    spend(top.size());
    boolean hasEntries = top.containsKey("entries");
    boolean hasConfig = top.containsKey("pg_config");
    if (!hasEntries && !hasConfig) {
      throw new DumpProblem("not a Flight Recorder dump: missing key 'entries' and 'pg_config'");
    }
    if (!top.containsKey("version")) {
      throw new DumpProblem("not a Flight Recorder dump: missing key 'version'");
    }
    String version = checkVersion(string(top.get("version"), "'version'"));
    if (!hasConfig) {
      throw new DumpProblem("not a Flight Recorder dump: missing key 'pg_config'");
    }
    for (Object key : top.keySet()) {
      if (!(key instanceof String) || !TOP_LEVEL_KEYS.contains(key)) {
        warn("unknown top-level key " + keyText(key) + " ignored");
      }
    }
    String commLib = "";
    if (top.containsKey("comm_lib_version")) {
      commLib = string(top.get("comm_lib_version"), "'comm_lib_version'");
    } else if (top.containsKey("nccl_version")) {
      commLib = string(top.get("nccl_version"), "'nccl_version'");
    }

    readConfig(top.get("pg_config"));

    List<CollectiveRecord> records = new ArrayList<>();
    if (hasEntries) {
      List<?> entries = list(top.get("entries"), "'entries'");
      spend(entries.size());
      for (int i = 0; i < entries.size(); i++) {
        records.add(entry(i, entries.get(i)));
      }
    } else if (!json) {
      // The JSON variant leaves 'entries' out when there are none; the pickle only when asked to.
      warn("no 'entries' key: the dump was taken without collectives");
    }

    List<Status> statuses = top.containsKey("pg_status") ? readStatus(top.get("pg_status")) : List.of();
    List<ProcessGroupProgress> progress = resolveProgress(statuses);

    Map<String, Long> pgIdByName = new HashMap<>();
    pgIdToName.forEach((id, name) -> pgIdByName.putIfAbsent(name, id));
    List<ProcessGroup> processGroups = new ArrayList<>(groups.size());
    for (Group g : groups.values()) {
      ProcessGroup.Builder b = ProcessGroup.newBuilder().setName(g.name()).setDesc(g.desc())
          .setGlobalRankStart(g.layout().start()).setGlobalRankStride(g.layout().stride());
      for (int r : g.ranks()) {
        b.addRanks(r);
      }
      Long pgId = pgIdByName.get(g.name());
      if (pgId != null) {
        b.setLocalId(Long.toString(pgId));
      }
      processGroups.add(b.build());
    }

    List<String> warningList = new ArrayList<>(warnings);
    if (droppedWarnings > 0) {
      warningList.add("… and " + droppedWarnings + " more warnings");
    }
    return new FlightRecorderDump(file, rank, version, commLib, processGroups, records, progress, frames,
        warningList);
  }

  private String checkVersion(String text) {
    DumpVersion v = DumpVersion.parse(text);
    if (v == null) {
      throw new DumpProblem("unsupported Flight Recorder dump version '" + abbreviate(text)
          + "': expected major.minor such as '2.9'");
    }
    if (v.major() != DumpVersion.NEWEST.major() || !v.atLeast(DumpVersion.OLDEST)) {
      throw new DumpProblem("unsupported Flight Recorder dump version '" + text + "': this reader supports "
          + DumpVersion.OLDEST + " to " + DumpVersion.NEWEST);
    }
    if (!DumpVersion.NEWEST.atLeast(v)) {
      warn("dump format version " + v + " is newer than " + DumpVersion.NEWEST
          + ", the newest this reader knows; read as " + DumpVersion.NEWEST);
    }
    return text;
  }

  // ---- pg_config ----

  private void readConfig(Object value) {
    Map<?, ?> config = dict(value, "'pg_config'");
    spend(config.size());
    List<String> notMember = new ArrayList<>();
    for (Map.Entry<?, ?> e : config.entrySet()) {
      if (!(e.getKey() instanceof String key)) {
        throw new DumpProblem("'pg_config' has a key that is " + describe(e.getKey()) + ", expected a string");
      }
      Object where = new At("pg_config", abbreviate(key));
      Map<?, ?> g = dict(e.getValue(), where);
      spend(g.size());
      String name = g.containsKey("name") ? string(g.get("name"), new At(where, "name")) : key;
      if (!name.equals(key)) {
        warn(where + " is named '" + abbreviate(name) + "'; the key is used");
        name = key;
      }
      String desc = g.containsKey("desc") ? string(g.get("desc"), new At(where, "desc")) : "";
      if (!g.containsKey("ranks")) {
        throw new DumpProblem(where + ": missing key 'ranks'");
      }
      for (Object k : g.keySet()) {
        if (!(k instanceof String) || !GROUP_KEYS.contains(k)) {
          warn("pg_config: unknown key " + keyText(k) + " ignored");
        }
      }
      int[] ranks = ranks(g.get("ranks"), where);
      if (ranks.length == 0) {
        warn(where + " lists no members; records on it get no peer and no comms_id");
        continue;
      }
      CommsId.GroupLayout layout;
      try {
        layout = CommsId.layoutOf(ranks);
      } catch (IllegalArgumentException ex) {
        throw new DumpProblem(where + ": " + ex.getMessage());
      }
      Group group = new Group(name, desc, ranks, layout);
      if (group.groupRankOf(rank) < 0) {
        notMember.add(name);
      }
      groups.put(name, group);
    }
    if (!notMember.isEmpty()) {
      warn("rank " + rank + " is not a member of process group" + (notMember.size() > 1 ? "s " : " ")
          + quoted(notMember) + " that its dump lists: is the file name right?");
    }
  }

  /** Parses "[0, 1, 2]" (PyTorch) or "[0,1,2]" (other writers); a list of ints is accepted too. */
  private int[] ranks(Object value, Object where) {
    if (value instanceof List<?> list) {
      spend(list.size());
      int[] out = new int[list.size()];
      for (int i = 0; i < out.length; i++) {
        long r = integer(list.get(i), new At(new At(where, "ranks"), i));
        if (r < 0 || r > Integer.MAX_VALUE) {
          throw new DumpProblem(where + ": rank " + r + " is out of range");
        }
        out[i] = (int) r;
      }
      return out;
    }
    String text = string(value, new At(where, "ranks")).strip();
    if (text.length() < 2 || text.charAt(0) != '[' || text.charAt(text.length() - 1) != ']') {
      throw badRanks(where, text);
    }
    String inner = text.substring(1, text.length() - 1).strip();
    if (inner.isEmpty()) {
      return new int[0];
    }
    String[] parts = inner.split(",", -1);
    spend(parts.length);
    int[] out = new int[parts.length];
    for (int i = 0; i < parts.length; i++) {
      String p = parts[i].strip();
      if (p.length() > 9 || !isDigits(p)) {
        throw badRanks(where, text);
      }
      out[i] = Integer.parseInt(p);
    }
    return out;
  }

  private static DumpProblem badRanks(Object where, String text) {
    return new DumpProblem(where + ": 'ranks' is '" + abbreviate(text)
        + "', expected a list of global ranks such as '[0, 1, 2]'");
  }

  // ---- entries ----

  private CollectiveRecord entry(int index, Object value) {
    Object where = new At("entries", index);
    Map<?, ?> e = dict(value, where);
    spend(e.size());
    long recordId = requiredInteger(e, "record_id", where);
    if (recordId < 0) {
      throw new DumpProblem(where + ": 'record_id' is negative (" + recordId + ")");
    }
    where = new EntryAt(index, recordId);
    for (Object k : e.keySet()) {
      if (!(k instanceof String) || !ENTRY_KEYS.contains(k)) {
        warn("entries: unknown key " + keyText(k) + " ignored");
      }
    }

    if (!e.containsKey("process_group")) {
      throw new DumpProblem(where + ": missing key 'process_group'");
    }
    String[] pg = nameAndDesc(e.get("process_group"), where);
    String pgName = pg[0];
    if (e.containsKey("pg_id")) {
      long pgId = integer(e.get("pg_id"), new At(where, "pg_id"));
      String before = pgIdToName.putIfAbsent(pgId, pgName);
      if (before != null && !before.equals(pgName)) {
        warn("pg_id " + pgId + " is used for process groups '" + abbreviate(before) + "' and '"
            + abbreviate(pgName) + "'");
      }
    }

    long collectiveSeq;
    if (e.containsKey("collective_seq_id")) {
      collectiveSeq = integer(e.get("collective_seq_id"), new At(where, "collective_seq_id"));
    } else if (e.containsKey("seq_id")) {
      collectiveSeq = integer(e.get("seq_id"), new At(where, "seq_id"));
    } else {
      throw new DumpProblem(where + ": missing key 'collective_seq_id'");
    }
    long p2pSeq = optionalInteger(e, "p2p_seq_id", where, 0);
    long opId = optionalInteger(e, "op_id", where, 0);
    if (!e.containsKey("profiling_name")) {
      throw new DumpProblem(where + ": missing key 'profiling_name'");
    }
    String profilingName = string(e.get("profiling_name"), new At(where, "profiling_name"));
    ProfilingName name = profilingNames.computeIfAbsent(profilingName, ProfilingName::parse);
    boolean isP2p = e.containsKey("is_p2p")
        ? bool(e.get("is_p2p"), new At(where, "is_p2p"))
        : name.op().equals("send") || name.op().equals("recv");

    CollectiveRecord.Builder b = CollectiveRecord.newBuilder()
        .setRecordId(recordId)
        .setProcessGroup(pgName)
        .setCollectiveSeq(collectiveSeq)
        .setP2PSeq(p2pSeq)
        .setOpId(opId)
        .setOp(name.op())
        .setBackend(name.backend())
        .setIsP2P(isP2p)
        .setTimeCreatedNs(requiredInteger(e, "time_created_ns", where))
        .setState(state(e, where))
        .setTimeStartedNs(timestamp(e, "time_discovered_started_ns", where))
        .setTimeCompletedNs(timestamp(e, "time_discovered_completed_ns", where))
        .setTimeoutMs(optionalInteger(e, "timeout_ms", where, 0))
        .setRetired(e.containsKey("retired") && bool(e.get("retired"), new At(where, "retired")));
    if (e.containsKey("duration_ms")) {
      b.setDurationMs(number(e.get("duration_ms"), new At(where, "duration_ms")));
    }
    if (e.containsKey("thread_name")) {
      b.setThreadName(string(e.get("thread_name"), new At(where, "thread_name")));
    }
    if (e.containsKey("thread_id")) {
      b.setThreadId(string(e.get("thread_id"), new At(where, "thread_id")));
    }
    List<Shape> inputSizes = e.containsKey("input_sizes")
        ? shapes(e.get("input_sizes"), new At(where, "input_sizes")) : List.of();
    List<Shape> outputSizes = e.containsKey("output_sizes")
        ? shapes(e.get("output_sizes"), new At(where, "output_sizes")) : List.of();
    List<String> inputDtypes = e.containsKey("input_dtypes")
        ? strings(e.get("input_dtypes"), new At(where, "input_dtypes")) : List.of();
    List<String> outputDtypes = e.containsKey("output_dtypes")
        ? strings(e.get("output_dtypes"), new At(where, "output_dtypes")) : List.of();
    int[] frameList = new int[0];
    if (e.containsKey("frames")) {
      List<?> list = list(e.get("frames"), new At(where, "frames"));
      spend(list.size());
      frameList = new int[list.size()];
      for (int i = 0; i < list.size(); i++) {
        frameList[i] = frame(list.get(i), new At(new At(where, "frames"), i));
      }
    }
    // An empty repeated field takes the template's list as it is: records share them instead of copying.
    b.mergeFrom(template(new Repeated(inputSizes, outputSizes, inputDtypes, outputDtypes, frameList)));

    Group group = groups.get(pgName);
    int peer = -1;
    long commsId = 0;
    if (group == null) {
      warn("entries refer to process group '" + abbreviate(pgName)
          + "' that pg_config does not list: no peer and no comms_id for them");
    } else {
      if (!group.desc().equals(pg[1])) {
        warn("entries describe process group '" + abbreviate(pgName) + "' as '" + abbreviate(pg[1])
            + "' but pg_config says '" + abbreviate(group.desc()) + "'");
      }
      if (isP2p && name.hasRanks()) {
        if (name.peerGroupRank() < group.ranks().length) {
          peer = group.ranks()[name.peerGroupRank()];
        } else {
          warn(where + ": peer group rank " + name.peerGroupRank() + " in '" + abbreviate(profilingName)
              + "' is outside process group '" + pgName + "' of " + group.ranks().length + " ranks");
        }
        if (name.selfGroupRank() != group.groupRankOf(rank)) {
          warn("P2P names on process group '" + pgName + "' give this rank group rank " + name.selfGroupRank()
              + " but pg_config makes rank " + rank + " group rank " + group.groupRankOf(rank));
        }
      }
      commsId = CommsId.of(pgName, isP2p ? p2pSeq : collectiveSeq, isP2p, group.layout());
    }
    return b.setPeer(peer).setCommsId(commsId).build();
  }

  private String[] nameAndDesc(Object value, Object where) {
    Object[] pair;
    if (value instanceof Object[] tuple) {
      pair = tuple;
    } else if (value instanceof List<?> list) {
      pair = list.toArray();
    } else {
      throw new DumpProblem(where + ": 'process_group' is " + describe(value) + ", expected a (name, desc) pair");
    }
    if (pair.length != 2 || !(pair[0] instanceof String name) || !(pair[1] instanceof String desc)) {
      throw new DumpProblem(where + ": 'process_group' is not a (name, desc) pair of strings");
    }
    return new String[] {name, desc};
  }

  private CollectiveState state(Map<?, ?> e, Object where) {
    if (!e.containsKey("state")) {
      throw new DumpProblem(where + ": missing key 'state'");
    }
    String s = string(e.get("state"), new At(where, "state"));
    switch (s) {
      case "scheduled":
        return CollectiveState.SCHEDULED;
      case "started":
        return CollectiveState.STARTED;
      case "completed":
        return CollectiveState.COMPLETED;
      default:
        warn("entries: unknown state '" + abbreviate(s) + "' read as unspecified");
        return CollectiveState.COLLECTIVE_STATE_UNSPECIFIED;
    }
  }

  /** None (pickle) and 0 (JSON) both mean "not seen". */
  private long timestamp(Map<?, ?> e, String key, Object where) {
    Object v = e.get(key);
    if (v == null) {
      return 0;
    }
    long t = integer(v, new At(where, key));
    if (t < 0) {
      throw new DumpProblem(where + ": '" + key + "' is negative (" + t + ")");
    }
    return t;
  }

  private CollectiveRecord template(Repeated r) {
    CollectiveRecord known = templates.get(r);
    if (known != null) {
      return known;
    }
    CollectiveRecord.Builder b = CollectiveRecord.newBuilder().addAllInputSizes(r.inputSizes)
        .addAllOutputSizes(r.outputSizes).addAllInputDtypes(r.inputDtypes).addAllOutputDtypes(r.outputDtypes);
    for (int id : r.frameIds) {
      b.addFrameIds(id);
    }
    CollectiveRecord t = b.build();
    templates.put(r, t);
    return t;
  }

  private List<Shape> shapes(Object value, Object where) {
    List<?> list = list(value, where);
    spend(list.size());
    List<Shape> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      List<?> dims = list(list.get(i), new At(where, i));
      spend(dims.size());
      Shape.Builder s = Shape.newBuilder();
      for (int d = 0; d < dims.size(); d++) {
        s.addDims(integer(dims.get(d), new At(new At(where, i), d)));
      }
      out.add(s.build());
    }
    return out;
  }

  private List<String> strings(Object value, Object where) {
    List<?> list = list(value, where);
    spend(list.size());
    List<String> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      out.add(string(list.get(i), new At(where, i)));
    }
    return out;
  }

  private int frame(Object value, Object where) {
    Integer known = sharedFrames.get(value);
    if (known != null) {
      return known;
    }
    Map<?, ?> f = dict(value, where);
    spend(f.size());
    Frame frame = Frame.newBuilder()
        .setName(f.containsKey("name") ? string(f.get("name"), new At(where, "name")) : "")
        .setFilename(f.containsKey("filename") ? string(f.get("filename"), new At(where, "filename")) : "")
        .setLine((int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE,
            optionalInteger(f, "line", where, 0))))
        .build();
    Integer id = frameIds.get(frame);
    if (id == null) {
      id = frameIds.size();
      frameIds.put(frame, id);
      frames.put(id, frame);
    }
    sharedFrames.put(value, id);
    return id;
  }

  // ---- pg_status ----

  private List<Status> readStatus(Object value) {
    Map<?, ?> status = dict(value, "'pg_status'");
    spend(status.size());
    List<Status> out = new ArrayList<>(status.size());
    for (Map.Entry<?, ?> e : status.entrySet()) {
      long pgId = pgId(e.getKey());
      Object where = new At("pg_status", Long.toString(pgId));
      Map<?, ?> s = dict(e.getValue(), where);
      spend(s.size());
      for (Object k : s.keySet()) {
        if (!(k instanceof String) || !STATUS_KEYS.contains(k)) {
          warn("pg_status: unknown key " + keyText(k) + " ignored");
        }
      }
      out.add(new Status(pgId, statusValue(s, "last_enqueued_collective", where),
          statusValue(s, "last_started_collective", where), statusValue(s, "last_completed_collective", where)));
    }
    out.sort(Comparator.comparingLong(Status::pgId));
    return out;
  }

  private static long pgId(Object key) {
    if (key instanceof String s && s.length() <= 18 && isDigits(s)) {
      return Long.parseLong(s);
    }
    if (key instanceof Integer || key instanceof Long) {
      return ((Number) key).longValue();
    }
    throw new DumpProblem("'pg_status' has key " + keyText(key) + ", expected a pg_id such as '3'");
  }

  /** An int; the JSON variant writes these as strings ("163", "-1"). Missing means none (-1). */
  private long statusValue(Map<?, ?> s, String key, Object where) {
    if (!s.containsKey(key)) {
      return -1;
    }
    Object v = s.get(key);
    if (json && v instanceof String text) {
      try {
        return Long.parseLong(text.strip());
      } catch (NumberFormatException ex) {
        throw new DumpProblem(where + ": '" + key + "' is '" + abbreviate(text) + "', expected an int");
      }
    }
    return integer(v, new At(where, key));
  }

  /**
   * Matches pg_status (keyed by pg_id) to group names. Entries give pg_id → name directly; the groups no entry
   * mentions are matched by creation order: PyTorch hands out both pg_ids and default group names ("0", "1",
   * …) in the order groups are created, so sorted pg_ids line up with numerically sorted names.
   */
  private List<ProcessGroupProgress> resolveProgress(List<Status> statuses) {
    Map<Long, String> names = new HashMap<>(pgIdToName);
    List<Long> unresolved = new ArrayList<>();
    for (Status s : statuses) {
      if (!names.containsKey(s.pgId())) {
        unresolved.add(s.pgId());
      }
    }
    if (!unresolved.isEmpty()) {
      Map<Long, String> byOrder = matchByCreationOrder(statuses);
      if (byOrder != null) {
        names.putAll(byOrder);
        unresolved.clear();
        pgIdToName.putAll(byOrder);
      } else {
        warn("pg_status lists pg_id" + (unresolved.size() > 1 ? "s " : " ") + unresolved
            + " that no entry names and pg_config order cannot match to a group: their progress is left out");
      }
    }
    List<ProcessGroupProgress> out = new ArrayList<>(statuses.size());
    for (Status s : statuses) {
      String name = names.get(s.pgId());
      if (name == null) {
        continue;
      }
      out.add(ProcessGroupProgress.newBuilder().setProcessGroup(name)
          .setLastEnqueuedSeq(s.enqueued()).setLastStartedSeq(s.started()).setLastCompletedSeq(s.completed())
          .setLastEnqueuedP2PSeq(-1).setLastCompletedP2PSeq(-1).build());
    }
    return out;
  }

  /** pg_id → name by creation order, or null when the order is not trustworthy. */
  private Map<Long, String> matchByCreationOrder(List<Status> statuses) {
    TreeSet<Long> ids = new TreeSet<>(pgIdToName.keySet());
    statuses.forEach(s -> ids.add(s.pgId()));
    List<String> ordered = new ArrayList<>(groups.keySet());
    boolean numeric = ordered.stream().allMatch(n -> n.length() <= 18 && isDigits(n));
    if (numeric) {
      ordered.sort(Comparator.comparingLong(Long::parseLong));
    }
    if (ids.size() != ordered.size()) {
      return null;
    }
    Map<Long, String> match = new HashMap<>();
    int i = 0;
    for (long id : ids) {
      match.put(id, ordered.get(i++));
    }
    for (Map.Entry<Long, String> known : pgIdToName.entrySet()) {
      if (!known.getValue().equals(match.get(known.getKey()))) {
        return null;
      }
    }
    if (!numeric) {
      warn("pg_status ids were matched to process groups by pg_config order, since the group names are not"
          + " numbers: the match is a guess");
    }
    return match;
  }

  // ---- typed access ----

  private void spend(long values) {
    budget -= values;
    if (budget < 0) {
      throw new DumpProblem("the dump expands to more values than its size allows: it refers to the same"
          + " containers over and over, which PyTorch never does");
    }
  }

  private void warn(String warning) {
    if (warnings.size() < MAX_WARNINGS || warnings.contains(warning)) {
      warnings.add(warning);
    } else {
      droppedWarnings++;
    }
  }

  private static Map<?, ?> dict(Object v, Object where) {
    if (v instanceof Map<?, ?> m) {
      return m;
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a dict");
  }

  private static List<?> list(Object v, Object where) {
    if (v instanceof List<?> l) {
      return l;
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a list");
  }

  private static String string(Object v, Object where) {
    if (v instanceof String s) {
      return s;
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a string");
  }

  private static boolean bool(Object v, Object where) {
    if (v instanceof Boolean b) {
      return b;
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a bool");
  }

  private static long integer(Object v, Object where) {
    if (v instanceof Integer || v instanceof Long) {
      return ((Number) v).longValue();
    }
    if (v instanceof BigInteger big) {
      if (big.bitLength() < 64) {
        return big.longValue();
      }
      throw new DumpProblem(where + " is " + abbreviate(big.toString()) + ", out of the 64-bit range");
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected an int");
  }

  private static double number(Object v, Object where) {
    if (v instanceof Double d) {
      return d;
    }
    if (v instanceof Integer || v instanceof Long || v instanceof BigInteger) {
      return ((Number) v).doubleValue();
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a float");
  }

  private static long requiredInteger(Map<?, ?> m, String key, Object where) {
    if (!m.containsKey(key)) {
      throw new DumpProblem(where + ": missing key '" + key + "'");
    }
    return integer(m.get(key), new At(where, key));
  }

  private static long optionalInteger(Map<?, ?> m, String key, Object where, long absent) {
    return m.containsKey(key) ? integer(m.get(key), new At(where, key)) : absent;
  }

  /** Describes a decoded value's type in the words of the dump's Python side. */
  static String describe(Object v) {
    if (v == null) {
      return "None";
    }
    if (v instanceof String) {
      return "a string";
    }
    if (v instanceof Boolean) {
      return "a bool";
    }
    if (v instanceof Integer || v instanceof Long || v instanceof BigInteger) {
      return "an int";
    }
    if (v instanceof Double) {
      return "a float";
    }
    if (v instanceof List) {
      return "a list";
    }
    if (v instanceof Map) {
      return "a dict";
    }
    if (v instanceof Object[]) {
      return "a tuple";
    }
    return "a " + v.getClass().getSimpleName();
  }

  private static String keyText(Object key) {
    return key instanceof String s ? "'" + abbreviate(s) + "'" : describe(key);
  }

  private static String quoted(List<String> names) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < names.size() && i < 8; i++) {
      sb.append(i == 0 ? "" : ", ").append('\'').append(abbreviate(names.get(i))).append('\'');
    }
    if (names.size() > 8) {
      sb.append(", …");
    }
    return sb.toString();
  }

  /** Non-empty and only ASCII digits. */
  static boolean isDigits(String s) {
    if (s.isEmpty()) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return false;
      }
    }
    return true;
  }

  static String abbreviate(String s) {
    return s.length() <= 64 ? s : s.substring(0, 64) + "…";
  }
}
