package dev.frdiag.testing.dumps;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.readers.pytorch.DumpVersion;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Writes Flight Recorder dumps the way PyTorch does, for tests, demos and benchmarks: the pickle byte for byte as
 * {@code torch::jit::Pickler} lays it out (key order, memo, int encodings), and the JSON of
 * {@code _dump_nccl_trace_json} (nlohmann's sorted keys, string-valued {@code pg_config} and {@code pg_status},
 * a {@code process_group} array, 0 for unset times, no frames, no {@code entries} when there are none).
 *
 * <p>The input is a {@link FlightRecorderDump}. The writer derives what PyTorch stores and the dump does not
 * hold directly: {@code pg_id} from each group's {@code local_id} (numbered after the largest one when empty),
 * and P2P profiling names ({@code "nccl:send 0->3"}) from the peer's global rank and the group's members. Fields
 * appear as the dump's {@code version} has them: {@code nccl_version} from 2.6, {@code comm_lib_version} from
 * 2.10, {@code thread_name}/{@code thread_id} from 2.9. Stateless and thread-safe.
 */
public final class DumpWriter {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The two encodings PyTorch writes. */
  public enum Encoding {
    /** {@code _dump_nccl_trace}: pickle protocol 2; the watchdog's file dumps. */
    PICKLE,
    /** {@code _dump_nccl_trace_json}. */
    JSON
  }

  private DumpWriter() {}

  /**
   * Writes {@code dump} into {@code dir} as {@code <prefix><rank>} (pickle) or {@code <prefix><rank>.json}.
   *
   * @return the file written
   * @throws IOException if writing fails
   * @throws IllegalArgumentException if a record has no state
   */
  public static Path write(FlightRecorderDump dump, Path dir, String prefix, Encoding encoding) throws IOException {
    Objects.requireNonNull(dir, "dir");
    Objects.requireNonNull(prefix, "prefix");
    Path file = dir.resolve(prefix + dump.rank() + (encoding == Encoding.JSON ? ".json" : ""));
    Files.write(file, encode(dump, encoding));
    return file;
  }

  /** The bytes of {@code dump} in {@code encoding}. */
  public static byte[] encode(FlightRecorderDump dump, Encoding encoding) {
    Objects.requireNonNull(encoding, "encoding");
    return encoding == Encoding.PICKLE ? toPickle(dump) : toJson(dump);
  }

  /** The pickle PyTorch would write for {@code dump}. */
  public static byte[] toPickle(FlightRecorderDump dump) {
    Layout layout = new Layout(dump);
    PickleWriter w = new PickleWriter();
    w.beginDict();
    w.string("version");
    w.string(dump.version());
    w.string("pg_config");
    w.beginDict();
    for (ProcessGroup g : layout.groups) {
      w.string(g.getName());
      w.beginDict();
      w.string("name");
      w.string(g.getName());
      w.string("desc");
      w.string(g.getDesc());
      w.string("ranks");
      w.string(ranksText(g));
      w.endDict();
    }
    w.endDict();
    if (layout.commLibKey != null) {
      w.string(layout.commLibKey);
      w.string(dump.commLibVersion());
    }
    w.string("pg_status");
    w.beginDict();
    for (ProcessGroupProgress p : layout.progress) {
      w.string(Long.toString(layout.pgId(p.getProcessGroup())));
      w.beginDict();
      w.string("last_enqueued_collective");
      w.integer(p.getLastEnqueuedSeq());
      w.string("last_started_collective");
      w.integer(p.getLastStartedSeq());
      w.string("last_completed_collective");
      w.integer(p.getLastCompletedSeq());
      w.endDict();
    }
    w.endDict();
    w.string("entries");
    w.beginList();
    Map<Integer, Integer> frameMemo = new HashMap<>();
    boolean withFrames = !dump.frames().isEmpty();
    for (CollectiveRecord r : dump.records()) {
      w.beginDict();
      if (withFrames) {
        w.string("frames");
        w.beginList();
        for (int id : r.getFrameIdsList()) {
          Integer memo = frameMemo.get(id);
          if (memo != null) {
            w.get(memo);
            continue;
          }
          Frame f = frame(dump, id);
          w.beginDict();
          w.string("name");
          w.string(f.getName());
          w.string("filename");
          w.string(f.getFilename());
          w.string("line");
          w.integer(f.getLine());
          w.endDict();
          // The C++ pickler memoizes a frame dict, shared by every entry that has it, once it is complete.
          frameMemo.put(id, w.put());
        }
        w.endList();
      }
      w.string("record_id");
      w.integer(r.getRecordId());
      w.string("pg_id");
      w.integer(layout.pgId(r.getProcessGroup()));
      w.string("process_group");
      w.string(r.getProcessGroup());
      w.string(layout.desc(r.getProcessGroup()));
      w.tuple2();
      if (layout.threadFields) {
        w.string("thread_name");
        w.string(r.getThreadName());
        w.string("thread_id");
        w.string(r.getThreadId());
      }
      w.string("collective_seq_id");
      w.integer(r.getCollectiveSeq());
      w.string("p2p_seq_id");
      w.integer(r.getP2PSeq());
      w.string("op_id");
      w.integer(r.getOpId());
      w.string("profiling_name");
      w.string(layout.profilingName(r));
      w.string("time_created_ns");
      w.integer(r.getTimeCreatedNs());
      if (r.getDurationMs() != 0) {
        w.string("duration_ms");
        w.floating(r.getDurationMs());
      }
      w.string("input_sizes");
      sizes(w, r.getInputSizesList());
      w.string("input_dtypes");
      strings(w, r.getInputDtypesList());
      w.string("output_sizes");
      sizes(w, r.getOutputSizesList());
      w.string("output_dtypes");
      strings(w, r.getOutputDtypesList());
      w.string("state");
      w.string(stateName(r));
      w.string("time_discovered_started_ns");
      timestamp(w, r.getTimeStartedNs());
      w.string("time_discovered_completed_ns");
      timestamp(w, r.getTimeCompletedNs());
      w.string("retired");
      w.bool(r.getRetired());
      w.string("timeout_ms");
      w.integer(r.getTimeoutMs());
      w.string("is_p2p");
      w.bool(r.getIsP2P());
      w.endDict();
    }
    w.endList();
    w.endDict();
    // The top-level dict is memoized too: the caller still holds a reference when it is pickled.
    w.put();
    return w.finish();
  }

  /** The JSON PyTorch would write for {@code dump}; stack frames are not part of it. */
  public static byte[] toJson(FlightRecorderDump dump) {
    Layout layout = new Layout(dump);
    // nlohmann::json keeps object keys in a std::map: sorted.
    Map<String, Object> top = new TreeMap<>();
    top.put("version", dump.version());
    if (layout.commLibKey != null) {
      top.put(layout.commLibKey, dump.commLibVersion());
    }
    Map<String, Object> config = new TreeMap<>();
    for (ProcessGroup g : layout.groups) {
      config.put(g.getName(), new TreeMap<>(Map.of("name", g.getName(), "desc", g.getDesc(),
          "ranks", ranksText(g))));
    }
    top.put("pg_config", config);
    Map<String, Object> status = new TreeMap<>();
    for (ProcessGroupProgress p : layout.progress) {
      status.put(Long.toString(layout.pgId(p.getProcessGroup())), new TreeMap<>(Map.of(
          "last_enqueued_collective", Long.toString(p.getLastEnqueuedSeq()),
          "last_started_collective", Long.toString(p.getLastStartedSeq()),
          "last_completed_collective", Long.toString(p.getLastCompletedSeq()))));
    }
    top.put("pg_status", status);
    List<Object> entries = new ArrayList<>(dump.records().size());
    for (CollectiveRecord r : dump.records()) {
      Map<String, Object> e = new TreeMap<>();
      e.put("record_id", r.getRecordId());
      e.put("pg_id", layout.pgId(r.getProcessGroup()));
      e.put("process_group", List.of(r.getProcessGroup(), layout.desc(r.getProcessGroup())));
      if (layout.threadFields) {
        e.put("thread_name", r.getThreadName());
        e.put("thread_id", r.getThreadId());
      }
      e.put("collective_seq_id", r.getCollectiveSeq());
      e.put("p2p_seq_id", r.getP2PSeq());
      e.put("op_id", r.getOpId());
      e.put("profiling_name", layout.profilingName(r));
      e.put("time_created_ns", r.getTimeCreatedNs());
      if (r.getDurationMs() != 0) {
        e.put("duration_ms", r.getDurationMs());
      }
      e.put("input_sizes", dims(r.getInputSizesList()));
      e.put("input_dtypes", r.getInputDtypesList());
      e.put("output_sizes", dims(r.getOutputSizesList()));
      e.put("output_dtypes", r.getOutputDtypesList());
      e.put("state", stateName(r));
      e.put("time_discovered_started_ns", r.getTimeStartedNs());
      e.put("time_discovered_completed_ns", r.getTimeCompletedNs());
      e.put("retired", r.getRetired());
      e.put("timeout_ms", r.getTimeoutMs());
      e.put("is_p2p", r.getIsP2P());
      entries.add(e);
    }
    if (!entries.isEmpty()) {
      top.put("entries", entries);
    }
    try {
      return JSON.writeValueAsBytes(top);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** What both encodings derive from the dump the same way. */
  private static final class Layout {
    final List<ProcessGroup> groups;
    final List<ProcessGroupProgress> progress;
    final String commLibKey;
    final boolean threadFields;
    private final Map<String, ProcessGroup> byName = new HashMap<>();
    private final Map<String, Long> pgIds = new LinkedHashMap<>();
    private final int rank;

    Layout(FlightRecorderDump dump) {
      this.rank = dump.rank();
      DumpVersion v = DumpVersion.parse(dump.version());
      if (v == null) {
        throw new IllegalArgumentException("version '" + dump.version() + "' is not major.minor");
      }
      commLibKey = v.atLeast(DumpVersion.COMM_LIB_VERSION_KEY) ? "comm_lib_version"
          : v.atLeast(DumpVersion.NCCL_VERSION_KEY) ? "nccl_version" : null;
      threadFields = v.atLeast(DumpVersion.THREAD_FIELDS);
      // PyTorch keeps pg_config in a std::map keyed by (name, desc).
      groups = dump.processGroups().stream()
          .sorted(Comparator.comparing(ProcessGroup::getName).thenComparing(ProcessGroup::getDesc)).toList();
      long next = 0;
      for (ProcessGroup g : dump.processGroups()) {
        byName.putIfAbsent(g.getName(), g);
        if (g.getLocalId().matches("\\d{1,18}")) {
          long id = Long.parseLong(g.getLocalId());
          pgIds.put(g.getName(), id);
          next = Math.max(next, id + 1);
        }
      }
      for (ProcessGroup g : dump.processGroups()) {
        if (!pgIds.containsKey(g.getName())) {
          pgIds.put(g.getName(), next++);
        }
      }
      for (CollectiveRecord r : dump.records()) {
        if (!pgIds.containsKey(r.getProcessGroup())) {
          pgIds.put(r.getProcessGroup(), next++);
        }
      }
      Function<ProcessGroupProgress, Long> id = p -> pgIds.getOrDefault(p.getProcessGroup(), Long.MAX_VALUE);
      progress = dump.progress().stream().filter(p -> pgIds.containsKey(p.getProcessGroup()))
          .sorted(Comparator.comparing(id)).toList();
    }

    long pgId(String group) {
      return pgIds.get(group);
    }

    String desc(String group) {
      ProcessGroup g = byName.get(group);
      return g == null ? "" : g.getDesc();
    }

    String profilingName(CollectiveRecord r) {
      ProcessGroup g = byName.get(r.getProcessGroup());
      int self = -1;
      int peer = -1;
      if (g != null && r.getIsP2P() && r.getPeer() >= 0) {
        self = g.getRanksList().indexOf(rank);
        peer = g.getRanksList().indexOf(r.getPeer());
      }
      return DumpWriter.profilingName(r.getBackend(), r.getOp(), self, peer);
    }
  }

  private static Frame frame(FlightRecorderDump dump, int id) {
    Frame f = dump.frames().get(id);
    if (f == null) {
      throw new IllegalArgumentException("frame id " + id + " is not in the dump's frame table");
    }
    return f;
  }

  /** PyTorch's {@code ranks_str}: "[0, 1, 2]". */
  static String ranksText(ProcessGroup g) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < g.getRanksCount(); i++) {
      sb.append(i == 0 ? "" : ", ").append(g.getRanks(i));
    }
    return sb.append(']').toString();
  }

  private static String stateName(CollectiveRecord r) {
    CollectiveState s = r.getState();
    switch (s) {
      case SCHEDULED:
        return "scheduled";
      case STARTED:
        return "started";
      case COMPLETED:
        return "completed";
      default:
        throw new IllegalArgumentException("record " + r.getRecordId() + " has no state (" + s + ")");
    }
  }

  private static void timestamp(PickleWriter w, long ns) {
    if (ns == 0) {
      w.none();
    } else {
      w.integer(ns);
    }
  }

  private static void sizes(PickleWriter w, List<Shape> shapes) {
    w.beginList();
    for (Shape s : shapes) {
      w.beginList();
      for (long d : s.getDimsList()) {
        w.integer(d);
      }
      w.endList();
    }
    w.endList();
  }

  private static void strings(PickleWriter w, List<String> values) {
    w.beginList();
    for (String s : values) {
      w.string(s);
    }
    w.endList();
  }

  private static List<List<Long>> dims(List<Shape> shapes) {
    List<List<Long>> out = new ArrayList<>(shapes.size());
    for (Shape s : shapes) {
      out.add(s.getDimsList());
    }
    return out;
  }

  /** The name PyTorch gives an op: backend, op and, for send/recv between known group ranks, the ranks. */
  private static String profilingName(String backend, String op, int selfGroupRank, int peerGroupRank) {
    String b = backend.isEmpty() ? "nccl" : backend;
    if (selfGroupRank >= 0 && peerGroupRank >= 0) {
      if (op.equals("send")) {
        return b + ":send " + selfGroupRank + "->" + peerGroupRank;
      }
      if (op.equals("recv")) {
        return b + ":recv " + selfGroupRank + "<-" + peerGroupRank;
      }
    }
    return b + ":" + op;
  }
}
