package dev.frdiag.readers.pytorch;

import static dev.frdiag.readers.pytorch.DumpValues.abbreviate;
import static dev.frdiag.readers.pytorch.DumpValues.describe;
import static dev.frdiag.readers.pytorch.DumpValues.dict;
import static dev.frdiag.readers.pytorch.DumpValues.integer;
import static dev.frdiag.readers.pytorch.DumpValues.isDigits;
import static dev.frdiag.readers.pytorch.DumpValues.keyText;
import static dev.frdiag.readers.pytorch.DumpValues.list;
import static dev.frdiag.readers.pytorch.DumpValues.string;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.readers.pytorch.DumpValues.At;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Turns the decoded value tree of one dump (from the pickle or the JSON variant) into a
 * {@link FlightRecorderDump}, checking every key and type it relies on. This class reads the top level (version,
 * library version, pg_status) and puts the dump together; {@link PgConfig} reads the process groups,
 * {@link EntryDecoder} the entries and {@link StackFrames} their stacks.
 *
 * <p>The tree is what {@link PickleDecoder} or {@link JsonDumps} produced: maps, lists, tuples as
 * {@code Object[]}, strings, numbers, booleans and null. Every value visited is counted against a
 * {@link ValueBudget}.
 */
final class DumpDecoder {
  // Set.of(...).contains(null) throws: check that a key is a String before looking it up.
  private static final Set<String> TOP_LEVEL_KEYS = Set.of("version", "comm_lib_version", "nccl_version",
      "pg_config", "pg_status", "entries", "nccl_comm_state");
  private static final Set<String> STATUS_KEYS = Set.of("last_enqueued_collective", "last_started_collective",
      "last_completed_collective");

  private final Path file;
  private final int rank;
  private final boolean json;
  private final ValueBudget budget;
  private final Interner interner;
  private final DumpWarnings warnings = new DumpWarnings();
  /** pg_id to group name, as the entries reveal it and pg_status order completes it. */
  private final Map<Long, String> pgIdToName = new TreeMap<>();

  /** A pg_status entry before its pg_id is matched to a group name. */
  private record Status(long pgId, long enqueued, long started, long completed) {}

  private DumpDecoder(Path file, int rank, boolean json, long budget, Interner interner) {
    this.interner = interner;
    this.file = file;
    this.rank = rank;
    this.json = json;
    this.budget = new ValueBudget(budget);
  }

  /**
   * @param root the decoded top-level value
   * @param json whether it came from the JSON variant (whose pg_status values are strings)
   * @param budget how many values the decoder may visit
   * @param interner where the values dumps repeat are shared across dumps
   * @throws DumpProblem describing the first problem
   */
  static FlightRecorderDump decode(Object root, Path file, int rank, boolean json, long budget,
      Interner interner) {
    return new DumpDecoder(file, rank, json, budget, interner).run(root);
  }

  private FlightRecorderDump run(Object root) {
    if (!(root instanceof Map<?, ?> top)) {
      throw new DumpProblem("not a Flight Recorder dump: the top level is " + describe(root) + ", expected a dict");
    }
    budget.spend(top.size());
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
        warnings.add("unknown top-level key " + keyText(key) + " ignored");
      }
    }
    String commLib = "";
    if (top.containsKey("comm_lib_version")) {
      commLib = string(top.get("comm_lib_version"), "'comm_lib_version'");
    } else if (top.containsKey("nccl_version")) {
      commLib = string(top.get("nccl_version"), "'nccl_version'");
    }

    PgConfig config = PgConfig.read(top.get("pg_config"), rank, budget, warnings);

    StackFrames frames = new StackFrames(budget);
    List<CollectiveRecord> records = new ArrayList<>();
    Map<String, String> recordedDescs = Map.of();
    boolean gloo = false;
    if (hasEntries) {
      EntryDecoder entryDecoder = new EntryDecoder(rank, config, pgIdToName, frames, budget, warnings, interner);
      List<?> entries = list(top.get("entries"), "'entries'");
      budget.spend(entries.size());
      readEntries(entryDecoder, entries, records);
      recordedDescs = entryDecoder.descs();
      gloo = entryDecoder.sawBackend("gloo");
    } else if (!json) {
      // The JSON variant leaves 'entries' out when there are none; the pickle only when asked to.
      warnings.add("no 'entries' key: the dump was taken without collectives");
    }

    List<Status> statuses = top.containsKey("pg_status") ? readStatus(top.get("pg_status")) : List.of();
    List<ProcessGroupProgress> progress = inCollectiveSeqs(resolveProgress(statuses, config), records, gloo);

    Map<String, Long> pgIdByName = new HashMap<>();
    pgIdToName.forEach((id, name) -> pgIdByName.putIfAbsent(name, id));
    List<ProcessGroup> processGroups = new ArrayList<>(config.groups().size());
    for (PgConfig.Group g : config.groups()) {
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
    if (config.groups().isEmpty()) {
      // No membership anywhere in the dump (gloo, PyTorch 2.13): this rank is the one member it can vouch for; the
      // job's dumps together complete each group (RecordedMembers).
      recordedDescs.forEach((name, desc) -> {
        ProcessGroup.Builder b = ProcessGroup.newBuilder().setName(name).setDesc(desc).addRanks(rank)
            .setGlobalRankStart(rank).setGlobalRankStride(1).setMembersFromRecords(true);
        Long pgId = pgIdByName.get(name);
        if (pgId != null) {
          b.setLocalId(Long.toString(pgId));
        }
        processGroups.add(b.build());
      });
    }

    return new FlightRecorderDump(file, rank, version, commLib, processGroups, records, progress, frames.byId(),
        warnings.toList());
  }

  /**
   * A method of its own so that its loop, which runs once per dump, is what gets compiled on the stack, not all of
   * {@link #run} (17 KB of machine code, compiled twice that way at 64 ranks: docs/PERFORMANCE.md).
   */
  private static void readEntries(EntryDecoder decoder, List<?> entries, List<CollectiveRecord> records) {
    for (int i = 0; i < entries.size(); i++) {
      records.add(decoder.entry(i, entries.get(i)));
    }
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
      warnings.add("dump format version " + v + " is newer than " + DumpVersion.NEWEST
          + ", the newest this reader knows; read as " + DumpVersion.NEWEST);
    }
    return text;
  }

  // ---- pg_status ----

  private List<Status> readStatus(Object value) {
    Map<?, ?> status = dict(value, "'pg_status'");
    budget.spend(status.size());
    List<Status> out = new ArrayList<>(status.size());
    for (Map.Entry<?, ?> e : status.entrySet()) {
      long pgId = pgId(e.getKey());
      Object where = new At("pg_status", Long.toString(pgId));
      Map<?, ?> s = dict(e.getValue(), where);
      budget.spend(s.size());
      for (Object k : s.keySet()) {
        if (!(k instanceof String) || !STATUS_KEYS.contains(k)) {
          warnings.add("pg_status: unknown key " + keyText(k) + " ignored");
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
  private List<ProcessGroupProgress> resolveProgress(List<Status> statuses, PgConfig config) {
    Map<Long, String> names = new HashMap<>(pgIdToName);
    List<Long> unresolved = new ArrayList<>();
    for (Status s : statuses) {
      if (!names.containsKey(s.pgId())) {
        unresolved.add(s.pgId());
      }
    }
    if (!unresolved.isEmpty()) {
      Map<Long, String> byOrder = matchByCreationOrder(statuses, config);
      if (byOrder != null) {
        names.putAll(byOrder);
        unresolved.clear();
        pgIdToName.putAll(byOrder);
      } else {
        warnings.add("pg_status lists pg_id" + (unresolved.size() > 1 ? "s " : " ") + unresolved
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

  /**
   * {@code progress} with the groups gloo records counted in collective seqs. ProcessGroupGloo fills pg_status from
   * its op counter, the op_id of its entries, which also counts the send/recv it never records (measured on 2.13:
   * a pipeline's default group shows 60/60 after 20 steps whose last collective is #20); the wire contract counts
   * collectives. An op_id maps to the newest collective this rank recorded at or before it; one older than every
   * record held maps to none (-1), and the ring's oldest seq then stands for what was overwritten. {@code gloo}:
   * whether some record is gloo's, told by the entries' decoder, which saw every profiling name.
   */
  private static List<ProcessGroupProgress> inCollectiveSeqs(List<ProcessGroupProgress> progress,
      List<CollectiveRecord> records, boolean gloo) {
    if (!gloo) {
      return progress;
    }
    List<ProcessGroupProgress> out = new ArrayList<>(progress.size());
    for (ProcessGroupProgress g : progress) {
      List<CollectiveRecord> mine = records.stream().filter(r -> !r.getIsP2P() && r.getOpId() > 0
          && r.getProcessGroup().equals(g.getProcessGroup())).toList();
      if (mine.isEmpty() || mine.stream().noneMatch(r -> r.getBackend().equals("gloo"))) {
        out.add(g);
        continue;
      }
      out.add(g.toBuilder().setLastEnqueuedSeq(seqAtOp(mine, g.getLastEnqueuedSeq()))
          .setLastStartedSeq(seqAtOp(mine, g.getLastStartedSeq()))
          .setLastCompletedSeq(seqAtOp(mine, g.getLastCompletedSeq())).build());
    }
    return out;
  }

  private static long seqAtOp(List<CollectiveRecord> records, long opId) {
    long seq = -1;
    for (CollectiveRecord r : records) {
      if (r.getOpId() <= opId) {
        seq = Math.max(seq, r.getCollectiveSeq());
      }
    }
    return seq;
  }

  /** pg_id → name by creation order, or null when the order is not trustworthy. */
  private Map<Long, String> matchByCreationOrder(List<Status> statuses, PgConfig config) {
    TreeSet<Long> ids = new TreeSet<>(pgIdToName.keySet());
    statuses.forEach(s -> ids.add(s.pgId()));
    List<String> ordered = config.names();
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
      warnings.add("pg_status ids were matched to process groups by pg_config order, since the group names are not"
          + " numbers: the match is a guess");
    }
    return match;
  }
}
