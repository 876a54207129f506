package dev.frdiag.readers.pytorch;

import static dev.frdiag.readers.pytorch.DumpValues.abbreviate;
import static dev.frdiag.readers.pytorch.DumpValues.bool;
import static dev.frdiag.readers.pytorch.DumpValues.describe;
import static dev.frdiag.readers.pytorch.DumpValues.dict;
import static dev.frdiag.readers.pytorch.DumpValues.integer;
import static dev.frdiag.readers.pytorch.DumpValues.keyText;
import static dev.frdiag.readers.pytorch.DumpValues.list;
import static dev.frdiag.readers.pytorch.DumpValues.number;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Turns the entries of one dump into {@link CollectiveRecord}s, one entry at a time: checks every key and type a
 * record relies on, gives P2P records their peer and every record on a known group its comms id, and notes which
 * pg_id each group name has. Not thread-safe; use one per dump.
 *
 * <p>One class on purpose: an entry is decoded in one pass over its keys, and what makes that pass cheap is state
 * the same pass reads and updates at every entry (the previous entry's key objects by position, the last group,
 * state and thread names, the records of repeated fields by the ids of the lists they come from). Its per-field
 * methods are kept within the client compiler's inlining limit (docs/PERFORMANCE.md, 2026-11-27); split across
 * classes, every entry would reach that state through calls or objects. What is not that state lives beside it:
 * the entry's keys ({@link EntryKey}), the value checks the dump's readers share ({@link DumpValues}), the group
 * configuration ({@link PgConfig}) and the stack frames ({@link StackFrames}).
 */
final class EntryDecoder {
  private static final int KEY_COUNT = EntryKey.COUNT;
  /** A None in an entry's fields, which hold null for a key the entry lacks. */
  private static final Object NONE = EntryKey.NONE;

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
  /**
   * The same templates by the ids of the repeated lists an entry's fields are (see {@link #sharedIds}), and what
   * decoding them cost.
   */
  private final Map<Long, Template> templatesByIds = new HashMap<>();
  private final long[] recentIds = new long[1 << RECENT_BITS];
  private final Template[] recentTemplates = new Template[1 << RECENT_BITS];
  private final Map<String, ProfilingName> profilingNames = new HashMap<>();
  private final Interner interner;
  /** The last group name read and its interned instance: entries name a few groups, through memo-shared strings. */
  private String lastGroupName;
  private String lastInternedGroupName;
  private String lastStateText;
  private CollectiveState lastState;
  private String lastThreadName;
  private String lastInternedThreadName;
  private String lastThreadId;
  private String lastInternedThreadId;
  /**
   * The key objects of the previous entry, by position, and what they are. Entries list their keys in one order
   * and the pickle shares each key string through its memo, so an identity test replaces most lookups.
   */
  private final Object[] lastKeyObjects = new Object[KEY_COUNT];
  private final EntryKey[] lastKeys = new EntryKey[KEY_COUNT];
  /**
   * Shapes by the decoded lists they come from: entries repeat a few sizes thousands of times, and comparing two
   * short lists of ints is cheaper than building their protobuf shapes again.
   */
  private final Map<List<?>, List<Shape>> shapeLists = new HashMap<>();
  /** The desc of each group name the entries name, in order of first appearance. */
  private final Map<String, String> descs = new LinkedHashMap<>();
  /** The entry being read, by key; one array for every entry, as nothing keeps it. */
  private final Object[] fields = new Object[KEY_COUNT];
  /** One builder for every record: build() copies what it holds, and clear() starts the next. */
  private final CollectiveRecord.Builder builder = CollectiveRecord.newBuilder();
  /** The frame ids of the entry being read; see {@link Repeated}. */
  private int[] frameIds = new int[128];

  private static final int ABSENT_ID = -1;
  private static final int NOT_SHARED = -2;
  private static final int ID_BITS = 12;
  private static final int ID_LIMIT = (1 << ID_BITS) - 1;
  /** The last templates found by ids, by a hash of the ids: entries cycle through a step's few ops. */
  private static final int RECENT_BITS = 6;

  /** A template and the values decoding its fields visited, spent again by every entry that shares them. */
  private record Template(CollectiveRecord record, long cost) {}

  /**
   * The repeated fields of one entry, compared by value. Its frame ids are the first {@code frameCount} of
   * {@code frameIds}: an entry's are looked up in a reused buffer, and only a new combination keeps a copy.
   */
  private static final class Repeated {
    final List<Shape> inputSizes;
    final List<Shape> outputSizes;
    final List<String> inputDtypes;
    final List<String> outputDtypes;
    final int[] frameIds;
    final int frameCount;
    private final int hash;

    Repeated(List<Shape> inputSizes, List<Shape> outputSizes, List<String> inputDtypes, List<String> outputDtypes,
        int[] frameIds, int frameCount) {
      this.inputSizes = inputSizes;
      this.outputSizes = outputSizes;
      this.inputDtypes = inputDtypes;
      this.outputDtypes = outputDtypes;
      this.frameIds = frameIds;
      this.frameCount = frameCount;
      int h = Objects.hash(inputSizes, outputSizes, inputDtypes, outputDtypes);
      for (int i = 0; i < frameCount; i++) {
        h = h * 31 + frameIds[i];
      }
      this.hash = h;
    }

    /** This key with a frame-id array of its own, to be kept. */
    Repeated kept() {
      return new Repeated(inputSizes, outputSizes, inputDtypes, outputDtypes, Arrays.copyOf(frameIds, frameCount),
          frameCount);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Repeated r && hash == r.hash
          && Arrays.equals(frameIds, 0, frameCount, r.frameIds, 0, r.frameCount)
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
      DumpWarnings warnings, Interner interner) {
    this.interner = interner;
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
    Object[] f;
    if (e instanceof EntryDict d) {
      f = d.fields();
    } else {
      f = fields;
      Arrays.fill(f, null);
      takeAll(f, e);
    }
    long recordId = required(f, EntryKey.RECORD_ID, where);
    if (recordId < 0) {
      throw new DumpProblem(where + ": 'record_id' is negative (" + recordId + ")");
    }
    where = new EntryAt(index, recordId);

    if (!has(f, EntryKey.PROCESS_GROUP)) {
      throw new DumpProblem(where + ": missing key 'process_group'");
    }
    Object[] pg = nameAndDesc(get(f, EntryKey.PROCESS_GROUP), where);
    String desc = (String) pg[1];
    if (pg[0] != lastGroupName) {
      lastGroupName = (String) pg[0];
      lastInternedGroupName = interner.intern(lastGroupName);
    }
    String pgName = lastInternedGroupName;
    descs.putIfAbsent(pgName, desc);
    if (has(f, EntryKey.PG_ID)) {
      long pgId = integerOf(get(f, EntryKey.PG_ID), where, EntryKey.PG_ID);
      String before = pgIdToName.putIfAbsent(pgId, pgName);
      if (before != null && !before.equals(pgName)) {
        warnings.add("pg_id " + pgId + " is used for process groups '" + abbreviate(before) + "' and '"
            + abbreviate(pgName) + "'");
      }
    }

    long collectiveSeq;
    if (has(f, EntryKey.COLLECTIVE_SEQ_ID)) {
      collectiveSeq = integerOf(get(f, EntryKey.COLLECTIVE_SEQ_ID), where, EntryKey.COLLECTIVE_SEQ_ID);
    } else if (has(f, EntryKey.SEQ_ID)) {
      collectiveSeq = integerOf(get(f, EntryKey.SEQ_ID), where, EntryKey.SEQ_ID);
    } else {
      throw new DumpProblem(where + ": missing key 'collective_seq_id'");
    }
    long p2pSeq = optional(f, EntryKey.P2P_SEQ_ID, where, 0);
    long opId = optional(f, EntryKey.OP_ID, where, 0);
    if (!has(f, EntryKey.PROFILING_NAME)) {
      throw new DumpProblem(where + ": missing key 'profiling_name'");
    }
    String profilingName = stringOf(get(f, EntryKey.PROFILING_NAME), where, EntryKey.PROFILING_NAME);
    ProfilingName name = profilingNames.get(profilingName);
    if (name == null) {
      ProfilingName parsed = ProfilingName.parse(profilingName);
      name = new ProfilingName(interner.intern(parsed.backend()), interner.intern(parsed.op()),
          parsed.selfGroupRank(), parsed.peerGroupRank(), parsed.send());
      profilingNames.put(profilingName, name);
    }
    boolean isP2p = has(f, EntryKey.IS_P2P)
        ? boolOf(get(f, EntryKey.IS_P2P), where, EntryKey.IS_P2P)
        : name.op().equals("send") || name.op().equals("recv");

    CollectiveRecord.Builder b = builder.clear()
        .setRecordId(recordId)
        .setProcessGroup(pgName)
        .setCollectiveSeq(collectiveSeq)
        .setP2PSeq(p2pSeq)
        .setOpId(opId)
        .setOp(name.op())
        .setBackend(name.backend())
        .setIsP2P(isP2p)
        .setTimeCreatedNs(required(f, EntryKey.TIME_CREATED_NS, where))
        .setState(state(f, where))
        .setTimeStartedNs(timestamp(f, EntryKey.STARTED_NS, where))
        .setTimeCompletedNs(timestamp(f, EntryKey.COMPLETED_NS, where))
        .setTimeoutMs(optional(f, EntryKey.TIMEOUT_MS, where, 0))
        .setRetired(has(f, EntryKey.RETIRED) && boolOf(get(f, EntryKey.RETIRED), where, EntryKey.RETIRED));
    if (has(f, EntryKey.DURATION_MS)) {
      b.setDurationMs(number(get(f, EntryKey.DURATION_MS), new At(where, "duration_ms")));
    }
    if (has(f, EntryKey.THREAD_NAME)) {
      String threadName = stringOf(get(f, EntryKey.THREAD_NAME), where, EntryKey.THREAD_NAME);
      if (threadName != lastThreadName) {
        lastThreadName = threadName;
        lastInternedThreadName = interner.intern(threadName);
      }
      b.setThreadName(lastInternedThreadName);
    }
    if (has(f, EntryKey.THREAD_ID)) {
      String threadId = stringOf(get(f, EntryKey.THREAD_ID), where, EntryKey.THREAD_ID);
      if (threadId != lastThreadId) {
        lastThreadId = threadId;
        lastInternedThreadId = interner.intern(threadId);
      }
      b.setThreadId(lastInternedThreadId);
    }
    // An empty repeated field takes the template's list as it is: records share them instead of copying.
    b.mergeFrom(template(f, where));

    PgConfig.Group group = config.group(pgName);
    int peer = -1;
    long commsId = 0;
    if (group == null && config.groups().isEmpty()) {
      // gloo's recorder (PyTorch 2.13) writes pg_config without members: the job's dumps together say who they are.
      warnings.add("pg_config lists no members: those of process group '" + abbreviate(pgName)
          + "' are taken to be the ranks whose records name it");
    } else if (group == null) {
      warnings.add("entries refer to process group '" + abbreviate(pgName)
          + "' that pg_config does not list: no peer and no comms_id for them");
    } else {
      if (!group.desc().equals(desc)) {
        warnings.add("entries describe process group '" + abbreviate(pgName) + "' as '" + abbreviate(desc)
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
      commsId = CommsId.of(group.commsIdPrefix(), isP2p ? p2pSeq : collectiveSeq, isP2p, group.layout());
    }
    return b.setPeer(peer).setCommsId(commsId).build();
  }

  /** The desc of each group name the entries named, in order of first appearance. */
  Map<String, String> descs() {
    return descs;
  }

  /** Whether some entry decoded so far was run by {@code backend}: looked up among the few profiling names seen. */
  boolean sawBackend(String backend) {
    for (ProfilingName name : profilingNames.values()) {
      if (name.backend().equals(backend)) {
        return true;
      }
    }
    return false;
  }

  /** The (name, desc) pair {@code value} is: two strings, checked. */
  private Object[] nameAndDesc(Object value, Object where) {
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
    return pair;
  }

  /** Takes the values of a dict the generic path built, by key. */
  private void takeAll(Object[] f, Map<?, ?> e) {
    if (e instanceof PickleDict d) {
      for (int i = 0; i < d.size(); i++) {
        take(f, key(i, d.keyAt(i)), d.keyAt(i), d.valueAt(i));
      }
    } else {
      int position = 0;
      for (Map.Entry<?, ?> kv : e.entrySet()) {
        take(f, key(position++, kv.getKey()), kv.getKey(), kv.getValue());
      }
    }
  }

  private void take(Object[] f, EntryKey key, Object k, Object v) {
    if (key == null) {
      warnings.add("entries: unknown key " + keyText(k) + " ignored");
    } else {
      f[key.ordinal()] = v == null ? NONE : v;
    }
  }

  /** What the entry's {@code position}-th key is, or null for a key entries do not have. */
  private EntryKey key(int position, Object k) {
    if (position < KEY_COUNT && k != null && lastKeyObjects[position] == k) {
      return lastKeys[position];
    }
    return newKey(position, k);
  }

  // The methods an entry calls once per field are kept under the client compiler's inlining limit (35 bytes of
  // bytecode): what they do rarely (look a key up, build a message) is in methods of its own.

  private EntryKey newKey(int position, Object k) {
    EntryKey key = k instanceof String text ? EntryKey.named(text) : null;
    if (position < KEY_COUNT) {
      lastKeyObjects[position] = k;
      lastKeys[position] = key;
    }
    return key;
  }

  private static boolean has(Object[] f, EntryKey key) {
    return f[key.ordinal()] != null;
  }

  private static Object get(Object[] f, EntryKey key) {
    Object v = f[key.ordinal()];
    return v == NONE ? null : v;
  }

  private static long required(Object[] f, EntryKey key, Object where) {
    if (!has(f, key)) {
      throw missing(key, where);
    }
    return integerOf(get(f, key), where, key);
  }

  private static DumpProblem missing(EntryKey key, Object where) {
    return new DumpProblem(where + ": missing key '" + key.text + "'");
  }

  private static long optional(Object[] f, EntryKey key, Object where, long absent) {
    return has(f, key) ? integerOf(get(f, key), where, key) : absent;
  }

  // Where a value sits is built only when a message needs it: an entry has twenty fields and a ring a million
  // entries.

  private static long integerOf(Object v, Object where, EntryKey key) {
    return v instanceof Integer ? (Integer) v : notInt(v, where, key);
  }

  /** Times in nanoseconds come as Long (LONG1); anything else is checked and named. */
  private static long notInt(Object v, Object where, EntryKey key) {
    return v instanceof Long ? (Long) v : integer(v, new At(where, key.text));
  }

  private static String stringOf(Object v, Object where, EntryKey key) {
    return v instanceof String text ? text : string(v, new At(where, key.text));
  }

  private static boolean boolOf(Object v, Object where, EntryKey key) {
    return v instanceof Boolean ? (Boolean) v : notBool(v, where, key);
  }

  private static boolean notBool(Object v, Object where, EntryKey key) {
    return bool(v, new At(where, key.text));
  }

  private CollectiveState state(Object[] f, Object where) {
    if (!has(f, EntryKey.STATE)) {
      throw new DumpProblem(where + ": missing key 'state'");
    }
    String s = stringOf(get(f, EntryKey.STATE), where, EntryKey.STATE);
    // Entries share a few memo strings: the last one's state is known by identity, without comparing text. An
    // unknown one is named again, so that its warning counts every entry, as warnings past the limit are counted.
    if (s == lastStateText) {
      return lastState;
    }
    CollectiveState state = stateNamed(s);
    if (state != CollectiveState.COLLECTIVE_STATE_UNSPECIFIED) {
      lastState = state;
      lastStateText = s;
    }
    return state;
  }

  private CollectiveState stateNamed(String s) {
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
  private static long timestamp(Object[] f, EntryKey key, Object where) {
    Object v = get(f, key);
    if (v == null) {
      return 0;
    }
    return nonNegative(integerOf(v, where, key), where, key);
  }

  private static long nonNegative(long t, Object where, EntryKey key) {
    if (t < 0) {
      throw new DumpProblem(where + ": '" + key.text + "' is negative (" + t + ")");
    }
    return t;
  }

  /**
   * The template of an entry's repeated fields (sizes, dtypes, stack). When each is a list the pickle repeats
   * ({@link RepeatedLists.Shared}), the template is found by the lists' ids and nothing of them is decoded again;
   * what decoding them cost against the budget is spent all the same. Otherwise, or the first time, the fields are
   * decoded and the template found by their values.
   */
  private CollectiveRecord template(Object[] f, Object where) {
    int inSizes = sharedId(f, EntryKey.INPUT_SIZES);
    int outSizes = sharedId(f, EntryKey.OUTPUT_SIZES);
    int inDtypes = sharedId(f, EntryKey.INPUT_DTYPES);
    int outDtypes = sharedId(f, EntryKey.OUTPUT_DTYPES);
    int stack = sharedId(f, EntryKey.FRAMES);
    long ids = sharedIds(inSizes, outSizes, inDtypes, outDtypes, stack);
    if (ids != NOT_SHARED) {
      int slot = (int) ((ids * 0x9E3779B97F4A7C15L) >>> (64 - RECENT_BITS));
      Template known = recentIds[slot] == ids ? recentTemplates[slot] : null;
      if (known == null) {
        known = templatesByIds.get(ids);
        if (known != null) {
          recentIds[slot] = ids;
          recentTemplates[slot] = known;
        }
      }
      if (known != null) {
        budget.spend(known.cost);
        return known.record;
      }
    }
    long before = budget.spent();
    List<Shape> inputSizes = has(f, EntryKey.INPUT_SIZES)
        ? shapes(get(f, EntryKey.INPUT_SIZES), new At(where, "input_sizes")) : List.of();
    List<Shape> outputSizes = has(f, EntryKey.OUTPUT_SIZES)
        ? shapes(get(f, EntryKey.OUTPUT_SIZES), new At(where, "output_sizes")) : List.of();
    List<String> inputDtypes = has(f, EntryKey.INPUT_DTYPES)
        ? strings(get(f, EntryKey.INPUT_DTYPES), new At(where, "input_dtypes")) : List.of();
    List<String> outputDtypes = has(f, EntryKey.OUTPUT_DTYPES)
        ? strings(get(f, EntryKey.OUTPUT_DTYPES), new At(where, "output_dtypes")) : List.of();
    int frameCount = 0;
    if (has(f, EntryKey.FRAMES)) {
      At framesAt = new At(where, "frames");
      List<?> list = list(get(f, EntryKey.FRAMES), framesAt);
      budget.spend(list.size());
      if (list.size() > frameIds.length) {
        frameIds = new int[list.size()];
      }
      for (int i = 0; i < list.size(); i++) {
        frameIds[i] = frames.id(list.get(i), framesAt, i);
      }
      frameCount = list.size();
    }
    CollectiveRecord t = template(new Repeated(inputSizes, outputSizes, inputDtypes, outputDtypes, frameIds,
        frameCount));
    if (ids != NOT_SHARED) {
      templatesByIds.put(ids, new Template(t, budget.spent() - before));
    }
    return t;
  }

  /**
   * The five ids (each absent or a shared list's) in one number, 12 bits each; {@link #NOT_SHARED} when one is not
   * a shared list or does not fit: a dump repeats a few dozen lists, not thousands.
   */
  private static long sharedIds(int inSizes, int outSizes, int inDtypes, int outDtypes, int stack) {
    long key = packed(packed(packed(packed(packed(0, inSizes), outSizes), inDtypes), outDtypes), stack);
    return key < 0 ? NOT_SHARED : key;
  }

  /** {@code key} with {@code id} appended; negative once an id is not a shared list or does not fit. */
  private static long packed(long key, int id) {
    return key < 0 || id == NOT_SHARED || id >= ID_LIMIT ? -1 : key << ID_BITS | (id + 1);
  }

  /** The id of the field's {@link RepeatedLists.Shared} list, {@link #ABSENT_ID} when absent, else NOT_SHARED. */
  private static int sharedId(Object[] f, EntryKey key) {
    Object v = f[key.ordinal()];
    return v == null ? ABSENT_ID : idOf(v);
  }

  private static int idOf(Object v) {
    return v instanceof RepeatedLists.Shared shared && shared.id >= 0 ? shared.id : NOT_SHARED;
  }

  private CollectiveRecord template(Repeated r) {
    CollectiveRecord known = templates.get(r);
    if (known != null) {
      return known;
    }
    CollectiveRecord.Builder b = CollectiveRecord.newBuilder();
    r.inputSizes.forEach(shape -> b.addInputSizes(interner.intern(shape)));
    r.outputSizes.forEach(shape -> b.addOutputSizes(interner.intern(shape)));
    r.inputDtypes.forEach(dtype -> b.addInputDtypes(interner.intern(dtype)));
    r.outputDtypes.forEach(dtype -> b.addOutputDtypes(interner.intern(dtype)));
    for (int i = 0; i < r.frameCount; i++) {
      b.addFrameIds(r.frameIds[i]);
    }
    // Ranks that issue the same ops hold equal templates: one for all of them, so that their records share lists.
    CollectiveRecord t = interner.intern(b.build());
    templates.put(r.kept(), t);
    return t;
  }

  private List<Shape> shapes(Object value, Object where) {
    List<?> list = list(value, where);
    budget.spend(list.size());
    // Only lists of lists of ints are looked up: hashing anything deeper could recurse without bound.
    boolean plain = isListOfInts(list);
    List<Shape> known = plain ? shapeLists.get(list) : null;
    if (known != null) {
      for (Shape shape : known) {
        budget.spend(shape.getDimsCount());
      }
      return known;
    }
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
    if (plain) {
      shapeLists.put(list, out);
    }
    return out;
  }

  private static boolean isListOfInts(List<?> shapes) {
    for (int i = 0; i < shapes.size(); i++) {
      if (!(shapes.get(i) instanceof List<?> dims)) {
        return false;
      }
      for (int d = 0; d < dims.size(); d++) {
        if (!(dims.get(d) instanceof Integer || dims.get(d) instanceof Long)) {
          return false;
        }
      }
    }
    return true;
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
