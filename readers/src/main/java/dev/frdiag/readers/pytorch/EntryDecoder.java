package dev.frdiag.readers.pytorch;

import static dev.frdiag.readers.pytorch.DumpValues.abbreviate;
import static dev.frdiag.readers.pytorch.DumpValues.bool;
import static dev.frdiag.readers.pytorch.DumpValues.describe;
import static dev.frdiag.readers.pytorch.DumpValues.dict;
import static dev.frdiag.readers.pytorch.DumpValues.integer;
import static dev.frdiag.readers.pytorch.DumpValues.keyText;
import static dev.frdiag.readers.pytorch.DumpValues.list;
import static dev.frdiag.readers.pytorch.DumpValues.number;
import static dev.frdiag.readers.pytorch.DumpValues.optionalInteger;
import static dev.frdiag.readers.pytorch.DumpValues.requiredInteger;
import static dev.frdiag.readers.pytorch.DumpValues.string;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.readers.pytorch.DumpValues.At;
import dev.frdiag.readers.pytorch.DumpValues.EntryAt;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Turns the entries of one dump into {@link CollectiveRecord}s, one entry at a time: checks every key and type a
 * record relies on, gives P2P records their peer and every record on a known group its comms id, and notes which
 * pg_id each group name has. Not thread-safe; use one per dump.
 */
final class EntryDecoder {
  // Set.of(...).contains(null) throws: check that a key is a String before looking it up.
  private static final Set<String> ENTRY_KEYS = Set.of("frames", "record_id", "pg_id", "process_group",
      "thread_name", "thread_id", "collective_seq_id", "seq_id", "p2p_seq_id", "op_id", "profiling_name",
      "time_created_ns", "duration_ms", "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state",
      "time_discovered_started_ns", "time_discovered_completed_ns", "retired", "timeout_ms", "is_p2p");

  private final int rank;
  private final PgConfig config;
  private final Map<Long, String> pgIdToName;
  private final StackFrames frames;
  private final ValueBudget budget;
  private final DumpWarnings warnings;
  /**
   * Records holding only the repeated fields entries have had so far. A rank's entries repeat a few stacks,
   * shapes and dtypes thousands of times; sharing one copy of each keeps a large job's dumps in memory at a
   * fraction of their size.
   */
  private final Map<Repeated, CollectiveRecord> templates = new HashMap<>();
  private final Map<String, ProfilingName> profilingNames = new HashMap<>();
  /**
   * Frame ids of each stack list the pickle shares through its memo, by identity: entries of one call site point
   * at one list, so its 73 frames are looked up once, not once per entry. Never mutated once stored.
   */
  private final Map<Object, int[]> stacks = new IdentityHashMap<>();
  private static final int[] NO_FRAMES = new int[0];

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


  /**
   * @param rank the rank the dump is from
   * @param config the dump's process groups
   * @param pgIdToName where to note the pg_id of each group name the entries reveal
   */
  EntryDecoder(int rank, PgConfig config, Map<Long, String> pgIdToName, StackFrames frames, ValueBudget budget,
      DumpWarnings warnings) {
    this.rank = rank;
    this.config = config;
    this.pgIdToName = pgIdToName;
    this.frames = frames;
    this.budget = budget;
    this.warnings = warnings;
  }

  /**
   * Decodes {@code entries[index]}.
   *
   * @throws DumpProblem describing the first problem
   */
  CollectiveRecord entry(int index, Object value) {
    Object where = new At("entries", index);
    Map<?, ?> e = dict(value, where);
    budget.spend(e.size());
    long recordId = requiredInteger(e, "record_id", where);
    if (recordId < 0) {
      throw new DumpProblem(where + ": 'record_id' is negative (" + recordId + ")");
    }
    where = new EntryAt(index, recordId);
    for (Object k : e.keySet()) {
      if (!(k instanceof String) || !ENTRY_KEYS.contains(k)) {
        warnings.add("entries: unknown key " + keyText(k) + " ignored");
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
        warnings.add("pg_id " + pgId + " is used for process groups '" + abbreviate(before) + "' and '"
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
    int[] frameList = NO_FRAMES;
    if (e.containsKey("frames")) {
      Object raw = e.get("frames");
      int[] known = stacks.get(raw);
      if (known != null) {
        budget.spend(known.length);
        frameList = known;
      } else {
        At framesAt = new At(where, "frames");
        List<?> list = list(raw, framesAt);
        budget.spend(list.size());
        frameList = new int[list.size()];
        for (int i = 0; i < list.size(); i++) {
          frameList[i] = frames.id(list.get(i), framesAt, i);
        }
        stacks.put(raw, frameList);
      }
    }
    // An empty repeated field takes the template's list as it is: records share them instead of copying.
    b.mergeFrom(template(new Repeated(inputSizes, outputSizes, inputDtypes, outputDtypes, frameList)));

    PgConfig.Group group = config.group(pgName);
    int peer = -1;
    long commsId = 0;
    if (group == null) {
      warnings.add("entries refer to process group '" + abbreviate(pgName)
          + "' that pg_config does not list: no peer and no comms_id for them");
    } else {
      if (!group.desc().equals(pg[1])) {
        warnings.add("entries describe process group '" + abbreviate(pgName) + "' as '" + abbreviate(pg[1])
            + "' but pg_config says '" + abbreviate(group.desc()) + "'");
      }
      if (isP2p && name.hasRanks()) {
        if (name.peerGroupRank() < group.ranks().length) {
          peer = group.ranks()[name.peerGroupRank()];
        } else {
          warnings.add(where + ": peer group rank " + name.peerGroupRank() + " in '" + abbreviate(profilingName)
              + "' is outside process group '" + pgName + "' of " + group.ranks().length + " ranks");
        }
        if (name.selfGroupRank() != group.groupRankOf(rank)) {
          warnings.add("P2P names on process group '" + pgName + "' give this rank group rank " + name.selfGroupRank()
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
        warnings.add("entries: unknown state '" + abbreviate(s) + "' read as unspecified");
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
    budget.spend(list.size());
    List<Shape> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      List<?> dims = list(list.get(i), new At(where, i));
      budget.spend(dims.size());
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
    budget.spend(list.size());
    List<String> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      out.add(string(list.get(i), new At(where, i)));
    }
    return out;
  }
}
