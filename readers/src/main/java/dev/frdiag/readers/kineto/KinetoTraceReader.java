package dev.frdiag.readers.kineto;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

/**
 * Reads PyTorch profiler traces (Kineto's JSON, as {@code torch.profiler} and {@code tensorboard_trace_handler}
 * write them, plain or gzip-compressed, told by content) into the collectives each rank ran. One pass over a
 * token stream: no file is ever held whole, only the collectives and the device's kernel intervals.
 *
 * <p>Collectives are told, in this order of preference: a {@code record_param_comms} CPU op carrying the
 * collective's keys, with the kernels linked to it by {@code External id}; a communication kernel alone (its own
 * keys, which Kineto copies from the linked op, else its name); gloo's work annotations ({@code gloo:all_reduce})
 * on each group's worker threads; {@code nccl:*} annotations. In a file that merges ranks (events carrying
 * {@code args.rank}, or processes named "RANK n"), ids are linked only within one rank, so colliding correlation
 * and External ids of different ranks never mix. Thread-safe: each {@link #read} is independent.
 */
public final class KinetoTraceReader {
  /** gloo's worker threads per process group (ProcessGroupGloo::Options, threads = 2 by default). */
  static final int GLOO_THREADS_PER_GROUP = 2;

  private static final JsonFactory JSON = JsonFactory.builder().build();
  private static final Pattern RANK_IN_NAME = Pattern.compile("(?i)rank[-_.]?(\\d+)");
  private static final Pattern RANK_PROCESS = Pattern.compile("(?i)\\brank\\s*(\\d+)");
  private static final Pattern NUMBER = Pattern.compile("-?\\d+");
  private static final Pattern NOT_LETTER = Pattern.compile("[^\\p{L}]");
  private static final String X = "X";
  private static final String M = "M";
  private static final String KERNEL = "kernel";
  private static final String CPU_OP = "cpu_op";
  private static final String GPU_USER_ANNOTATION = "gpu_user_annotation";
  private static final List<String> CATEGORIES = List.of(KERNEL, CPU_OP, "cuda_runtime", "ac2g",
      "user_annotation", GPU_USER_ANNOTATION, "gpu_memcpy", "gpu_memset", "python_function");
  /** What a compute kernel's name is read as: nothing but that it is one. */
  private static final String COMPUTE_KERNEL = "(compute kernel)";
  /** What an ordinary CPU op's name is read as. */
  private static final String OTHER_OP = "(cpu op)";

  private KinetoTraceReader() {}

  /** A reader. */
  public static KinetoTraceReader create() {
    return new KinetoTraceReader();
  }

  /**
   * Whether {@code head}, the first characters of a text file, looks like a profiler trace: a JSON object with
   * {@code "traceEvents"} or Kineto's {@code "schemaVersion"} near its start.
   */
  public static boolean looksLikeTrace(String head) {
    String t = head.stripLeading();
    return t.startsWith("{") && (head.contains("\"traceEvents\"") || head.contains("\"schemaVersion\"")
        && head.contains("\"deviceProperties\""));
  }

  /**
   * The rank a trace's file name gives: the number after "rank" ({@code rank3.1700000000.pt.trace.json},
   * {@code sampled_rank-1.json.gz}, {@code rank0_trace.json}); empty when the name holds none (PyTorch's default
   * {@code <host>_<pid>.<ms>.pt.trace.json} does not).
   */
  public static OptionalInt rankFromFileName(String name) {
    Matcher m = RANK_IN_NAME.matcher(name);
    OptionalInt rank = OptionalInt.empty();
    while (m.find()) {
      try {
        rank = OptionalInt.of(Integer.parseInt(m.group(1)));
      } catch (NumberFormatException e) {
        return OptionalInt.empty();
      }
    }
    return rank;
  }

  /**
   * Reads {@code file}. A file cut short (a crashed job leaves its trace unterminated) gives what was read before
   * the cut, with a note.
   *
   * @throws TraceFormatException when it is no profiler trace, or neither it nor its name says whose it is
   * @throws IOException when it cannot be read
   */
  public KinetoTrace read(Path file) throws IOException {
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
      raw.mark(2);
      int b0 = raw.read();
      int b1 = raw.read();
      raw.reset();
      InputStream in = b0 == 0x1f && b1 == 0x8b ? new BufferedInputStream(new GZIPInputStream(raw, 1 << 16), 1 << 16)
          : raw;
      return new Parse(file).run(in);
    }
  }

  /** A process group's entry in {@code distributedInfo.pg_config}. */
  private record PgConfig(String name, String desc, String backend, List<Integer> ranks) {}

  /** A communication kernel as it arrived; linked to its CPU op at the end of the file. */
  private record Kernel(long extId, String name, long startNs, long endNs, Keys keys) {}

  /** The collective keys an event's arguments carry. */
  private record Keys(String op, TraceGroup group, long seq, long commsId, boolean hasCommsId, String dtype,
      long elements) {}

  /** A CPU-side operation: a {@code record_param_comms} awaiting its kernels, or an annotation. */
  private static final class CpuOp {
    final long tsNs;
    final long tid;
    final long durNs;
    final String name;
    final Keys keys;
    long startNs;
    long endNs;
    boolean claimed;

    CpuOp(long tsNs, long durNs, long tid, String name, Keys keys) {
      this.tsNs = tsNs;
      this.durNs = durNs;
      this.tid = tid;
      this.name = name;
      this.keys = keys;
    }
  }

  /** What one rank's events gave so far (relative ns: the base may come last in the file). */
  private static final class RankEvents {
    final Map<Long, CpuOp> paramComms = new HashMap<>();
    final List<CpuOp> paramCommsInOrder = new ArrayList<>();
    final List<Kernel> commKernels = new ArrayList<>();
    final Spans compute = new Spans();
    final Spans communication = new Spans();
    final List<CpuOp> glooWork = new ArrayList<>();
    final List<CpuOp> c10dOps = new ArrayList<>();
    final Set<Long> issuingThreads = new HashSet<>();
    final List<CpuOp> ncclAnnotations = new ArrayList<>();

    boolean isEmpty() {
      return paramComms.isEmpty() && commKernels.isEmpty() && glooWork.isEmpty() && ncclAnnotations.isEmpty()
          && c10dOps.isEmpty();
    }
  }

  /** One file's reading. */
  private static final class Parse {
    private final Path file;
    private final List<String> notes = new ArrayList<>();
    private final Map<String, TraceGroup> groups = new HashMap<>();
    /** By the rank an event names; -1 for events that name none (every event of a one-rank file). */
    private final Map<Integer, RankEvents> byRank = new TreeMap<>();
    private final Map<String, Integer> pidRanks = new HashMap<>();
    private long baseNs;
    private int infoRank = -1;
    private int worldSize;
    private String backend = "";
    private String host = "";
    private final List<PgConfig> pgConfig = new ArrayList<>();
    private boolean sawEvents;

    // The event being read; reused, as a trace holds millions.
    private String ph;
    private String cat;
    private String name;
    private String pid;
    private long tid;
    private long tsNs;
    private long durNs;
    private boolean hasTs;
    private long extId;
    private int argRank;
    private String argName;
    private String argLabels;
    private String collName;
    private String pgName;
    private String pgDesc;
    private String pgRanks;
    private long seq;
    private long commsId;
    private boolean hasCommsId;
    private long inElements;
    private long outElements;
    private String dtype;

    Parse(Path file) {
      this.file = file;
    }

    KinetoTrace run(InputStream in) throws IOException {
      try (JsonParser p = JSON.createParser(in)) {
        if (p.nextToken() != JsonToken.START_OBJECT) {
          throw new TraceFormatException(file, "not a profiler trace: not a JSON object");
        }
        try {
          topLevel(p);
        } catch (JsonProcessingException e) {
          if (!sawEvents) {
            throw new TraceFormatException(file, "not a profiler trace: " + e.getOriginalMessage(), e);
          }
          notes.add("cut short at byte " + e.getLocation().getByteOffset() + " (" + e.getOriginalMessage()
              + "): the events before it are read");
        }
      }
      if (!sawEvents) {
        throw new TraceFormatException(file, "not a profiler trace: no \"traceEvents\"");
      }
      return new KinetoTrace(file, ranks(), notes);
    }

    private void topLevel(JsonParser p) throws IOException {
      for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
        String key = p.currentName();
        JsonToken value = p.nextToken();
        switch (key) {
          case "traceEvents" -> {
            if (value != JsonToken.START_ARRAY) {
              throw new TraceFormatException(file, "not a profiler trace: \"traceEvents\" is no list");
            }
            sawEvents = true;
            events(p);
          }
          case "distributedInfo" -> distributedInfo(p);
          case "baseTimeNanoseconds" -> baseNs = longValue(p);
          case "host_name", "hostname" -> host = value == JsonToken.VALUE_STRING ? p.getText() : host;
          default -> p.skipChildren();
        }
      }
    }

    private void distributedInfo(JsonParser p) throws IOException {
      if (p.currentToken() != JsonToken.START_OBJECT) {
        p.skipChildren();
        return;
      }
      for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
        String key = p.currentName();
        p.nextToken();
        switch (key) {
          case "rank" -> infoRank = (int) longValue(p);
          case "world_size" -> worldSize = (int) longValue(p);
          case "backend" -> backend = p.getValueAsString("");
          case "pg_config" -> pgConfig(p);
          default -> p.skipChildren();
        }
      }
    }

    private void pgConfig(JsonParser p) throws IOException {
      if (p.currentToken() != JsonToken.START_ARRAY) {
        p.skipChildren();
        return;
      }
      while (p.nextToken() == JsonToken.START_OBJECT) {
        String n = "";
        String d = "";
        String b = "";
        List<Integer> members = List.of();
        for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
          String key = p.currentName();
          p.nextToken();
          switch (key) {
            case "pg_name" -> n = p.getValueAsString("");
            case "pg_desc" -> d = p.getValueAsString("");
            case "backend_config" -> b = p.getValueAsString("");
            case "ranks" -> members = ranks(p);
            default -> p.skipChildren();
          }
        }
        pgConfig.add(new PgConfig(n, d, b, members));
      }
    }

    private void events(JsonParser p) throws IOException {
      for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
        if (t == null) {
          throw new TraceFormatException(file, "cut short: the event list never ends");
        }
        if (t != JsonToken.START_OBJECT) {
          p.skipChildren();
          continue;
        }
        event(p);
      }
    }

    private void event(JsonParser p) throws IOException {
      ph = null;
      cat = null;
      name = null;
      pid = null;
      tid = -1;
      hasTs = false;
      tsNs = 0;
      durNs = 0;
      extId = -1;
      argRank = -1;
      argName = null;
      argLabels = null;
      collName = null;
      pgName = null;
      pgDesc = null;
      pgRanks = null;
      seq = -1;
      commsId = 0;
      hasCommsId = false;
      inElements = 0;
      outElements = 0;
      dtype = null;
      for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
        String key = p.currentName();
        JsonToken v = p.nextToken();
        switch (key) {
          case "ph" -> ph = phase(p);
          case "cat" -> cat = v == JsonToken.VALUE_STRING ? category(p) : null;
          case "name" -> name = v == JsonToken.VALUE_STRING ? name(p) : null;
          // Kept only where a process name may map it to a rank (files merging ranks): a string per event costs.
          case "pid" -> pid = v.isScalarValue() && (ph == M || !pidRanks.isEmpty()) ? p.getText() : null;
          case "tid" -> tid = v.isNumeric() ? p.getValueAsLong(-1) : -1;
          case "ts" -> {
            if (v.isNumeric()) {
              tsNs = TraceTimes.nanos(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
              hasTs = true;
            }
          }
          case "dur" -> {
            if (v.isNumeric()) {
              durNs = Math.max(0, TraceTimes.nanos(p.getTextCharacters(), p.getTextOffset(), p.getTextLength()));
            }
          }
          case "args" -> args(p);
          default -> p.skipChildren();
        }
      }
      if (ph == null) {
        return;
      }
      if (ph == X && hasTs && name != null) {
        complete();
      } else if (ph == M && "process_name".equals(name) && pid != null) {
        String label = argName != null ? argName : argLabels;
        if (label != null) {
          Matcher m = RANK_PROCESS.matcher(label);
          if (m.find()) {
            pidRanks.put(pid, Integer.parseInt(m.group(1)));
          }
        }
      }
    }

    private void args(JsonParser p) throws IOException {
      if (p.currentToken() != JsonToken.START_OBJECT) {
        p.skipChildren();
        return;
      }
      for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
        String key = p.currentName();
        JsonToken v = p.nextToken();
        switch (key) {
          case "External id" -> extId = longValue(p);
          case "rank" -> argRank = (int) longValue(p);
          case "name" -> argName = v == JsonToken.VALUE_STRING ? p.getText() : null;
          case "labels" -> argLabels = v == JsonToken.VALUE_STRING ? p.getText() : null;
          case "Collective name" -> collName = stripQuotes(p.getValueAsString(null));
          case "Process Group Name" -> pgName = stripQuotes(p.getValueAsString(null));
          case "Process Group Description" -> pgDesc = stripQuotes(p.getValueAsString(null));
          case "Process Group Ranks" -> pgRanks = v == JsonToken.START_ARRAY ? ranks(p).toString()
              : p.getValueAsString(null);
          case "Seq" -> seq = longValue(p);
          case "Comms Id" -> {
            String s = stripQuotes(p.getText());
            if (s != null && !s.isEmpty()) {
              try {
                commsId = Long.parseUnsignedLong(s);
                hasCommsId = true;
              } catch (NumberFormatException e) {
                hasCommsId = false;
              }
            }
          }
          case "In msg nelems" -> inElements = longValue(p);
          case "Out msg nelems" -> outElements = longValue(p);
          case "dtype" -> dtype = stripQuotes(p.getValueAsString(null));
          default -> p.skipChildren();
        }
      }
    }

    /** The event's phase, one shared string for the two read ("X", "M"), others as they are. */
    private static String phase(JsonParser p) throws IOException {
      if (p.getTextLength() == 1) {
        char c = p.getTextCharacters()[p.getTextOffset()];
        if (c == 'X') {
          return X;
        }
        if (c == 'M') {
          return M;
        }
      }
      return p.getText();
    }

    /** The event's category, the ones read as shared strings. */
    private static String category(JsonParser p) throws IOException {
      for (String known : CATEGORIES) {
        if (textIs(p, known)) {
          return known;
        }
      }
      return p.getText();
    }

    /**
     * The event's name where it may matter; a compute kernel's or an ordinary CPU op's name is read only as far as
     * its first characters, since most of a trace's events are those.
     */
    private String name(JsonParser p) throws IOException {
      if ((cat == KERNEL || cat == CPU_OP) && !startsWith(p, "nccl") && !startsWith(p, "record_param_comms")
          && !startsWith(p, "c10d::") && !startsWith(p, "rccl") && !startsWith(p, "cross_device_reduce")
          && !startsWith(p, "ncclDev")) {
        char[] t = p.getTextCharacters();
        int off = p.getTextOffset();
        int len = p.getTextLength();
        boolean maybeComm = false;
        for (int i = off; i < off + len - 3 && !maybeComm; i++) {
          char c = t[i];
          maybeComm = (c == 'r' || c == 'R') && (t[i + 1] == 'c' || t[i + 1] == 'C')
              || c == 'a' && t[i + 1] == 'l' && t[i + 2] == 'l' && t[i + 3] == 'r';
        }
        if (!maybeComm) {
          return cat == KERNEL ? COMPUTE_KERNEL : OTHER_OP;
        }
      }
      return p.getText();
    }

    private static boolean textIs(JsonParser p, String s) throws IOException {
      return p.getTextLength() == s.length() && startsWith(p, s);
    }

    private static boolean startsWith(JsonParser p, String s) throws IOException {
      if (p.getTextLength() < s.length()) {
        return false;
      }
      char[] t = p.getTextCharacters();
      int off = p.getTextOffset();
      for (int i = 0; i < s.length(); i++) {
        if (t[off + i] != s.charAt(i)) {
          return false;
        }
      }
      return true;
    }

    /** A complete ("X") event: keep what tells a collective, and the device's busy time. */
    private void complete() {
      if (cat == KERNEL) {
        RankEvents r = rankEvents();
        long end = tsNs + durNs;
        if (CommKernels.isCommunication(name)) {
          r.communication.add(tsNs, end);
          r.commKernels.add(new Kernel(extId, name, tsNs, end, collName == null ? null : keys()));
        } else {
          r.compute.add(tsNs, end);
        }
        return;
      }
      if (cat == CPU_OP) {
        if (name.equals("record_param_comms")) {
          if (collName != null && !collName.equals("wait") && extId >= 0) {
            RankEvents r = rankEvents();
            CpuOp op = new CpuOp(tsNs, durNs, tid, name, keys());
            r.paramComms.put(extId, op);
            r.paramCommsInOrder.add(op);
          }
        } else if (name.startsWith("c10d::")) {
          RankEvents r = rankEvents();
          r.c10dOps.add(new CpuOp(tsNs, durNs, tid, name, null));
          r.issuingThreads.add(tid);
        }
        return;
      }
      if (name.startsWith("gloo:")) {
        rankEvents().glooWork.add(new CpuOp(tsNs, durNs, tid, name, null));
      } else if (name.startsWith("nccl:") && cat != GPU_USER_ANNOTATION) {
        rankEvents().ncclAnnotations.add(new CpuOp(tsNs, durNs, tid, name, null));
      }
    }

    private RankEvents rankEvents() {
      int rank = argRank;
      if (rank < 0 && pid != null) {
        rank = pidRanks.getOrDefault(pid, -1);
      }
      return byRank.computeIfAbsent(rank, k -> new RankEvents());
    }

    private Keys keys() {
      String g = pgName == null ? "" : pgName;
      String d = pgDesc == null ? "" : pgDesc;
      String members = pgRanks == null ? "" : pgRanks;
      TraceGroup group = g.isEmpty() ? TraceGroup.UNNAMED
          : groups.computeIfAbsent(g + "\u0000" + d + "\u0000" + members,
              k -> new TraceGroup(g, d, parseRanks(members)));
      return new Keys(collName == null ? "" : collName, group, seq, commsId, hasCommsId, dtype,
          Math.max(inElements, outElements));
    }

    /** Every rank the file holds, each with its collectives. */
    private List<RankTrace> ranks() throws TraceFormatException {
      boolean merged = byRank.keySet().stream().anyMatch(k -> k >= 0);
      List<RankTrace> out = new ArrayList<>();
      for (Map.Entry<Integer, RankEvents> e : byRank.entrySet()) {
        int key = e.getKey();
        RankEvents events = e.getValue();
        if (key < 0 && merged) {
          if (!events.isEmpty()) {
            notes.add("events that name no rank in a file merging ranks " + byRank.keySet().stream()
                .filter(k -> k >= 0).toList() + " are left out: linking them could mix ranks");
          }
          continue;
        }
        int rank = key;
        String from = "args.rank";
        if (key < 0) {
          OptionalInt named = rankFromFileName(String.valueOf(file.getFileName()));
          if (infoRank >= 0) {
            rank = infoRank;
            from = "distributedInfo";
          } else if (named.isPresent()) {
            rank = named.getAsInt();
            from = "the file name";
          } else {
            throw new TraceFormatException(file, "whose trace: distributedInfo names no rank and the file name "
                + "holds none (name it rank<N>…, e.g. rank3.pt.trace.json)");
          }
        } else if (pidRanks.containsValue(key)) {
          from = "the process name";
        }
        out.add(rankTrace(rank, from, events, !merged));
      }
      if (out.isEmpty() && infoRank >= 0) {
        out.add(rankTrace(infoRank, "distributedInfo", new RankEvents(), true));
      } else if (out.isEmpty()) {
        OptionalInt named = rankFromFileName(String.valueOf(file.getFileName()));
        if (named.isEmpty()) {
          throw new TraceFormatException(file, "whose trace: distributedInfo names no rank and the file name "
              + "holds none (name it rank<N>…, e.g. rank3.pt.trace.json)");
        }
        out.add(rankTrace(named.getAsInt(), "the file name", new RankEvents(), true));
      }
      return out;
    }

    private RankTrace rankTrace(int rank, String from, RankEvents r, boolean ownInfo) {
      List<TraceCollective> collectives = new ArrayList<>();
      Set<CpuOp> linked = new HashSet<>();
      for (Kernel k : r.commKernels) {
        CpuOp op = k.extId() < 0 ? null : r.paramComms.get(k.extId());
        if (op != null) {
          op.startNs = op.startNs == 0 ? k.startNs() : Math.min(op.startNs, k.startNs());
          op.endNs = Math.max(op.endNs, k.endNs());
          linked.add(op);
        } else {
          collectives.add(fromKernel(k));
        }
      }
      for (CpuOp op : r.paramCommsInOrder) {
        Keys k = op.keys;
        collectives.add(new TraceCollective(k.group(), k.seq(), k.commsId(), k.hasCommsId(), isP2p(k.op()), k.op(),
            k.dtype(), k.elements(), op.tsNs, op.startNs, op.endNs, TraceCollective.Found.RECORD_PARAM_COMMS));
      }
      if (collectives.isEmpty() && !r.glooWork.isEmpty()) {
        collectives.addAll(glooCollectives(r, ownInfo));
      }
      if (collectives.isEmpty()) {
        for (CpuOp a : r.ncclAnnotations) {
          String op = a.name.substring("nccl:".length());
          collectives.add(new TraceCollective(TraceGroup.UNNAMED, -1, 0, false, isP2p(op), op, "", 0, a.tsNs, 0,
              0, TraceCollective.Found.ANNOTATION));
        }
      }
      collectives.sort(Comparator.comparingLong(KinetoTraceReader::firstTime));
      List<TraceCollective> absolute = new ArrayList<>(collectives.size());
      for (TraceCollective c : collectives) {
        absolute.add(c.shifted(baseNs));
      }
      return new RankTrace(rank, from, ownInfo ? worldSize : 0, ownInfo ? backend : "", ownInfo ? host : "",
          absolute, r.compute.toArray(baseNs), r.communication.toArray(baseNs));
    }

    private TraceCollective fromKernel(Kernel k) {
      Keys keys = k.keys();
      if (keys != null && !keys.op().isEmpty()) {
        return new TraceCollective(keys.group(), keys.seq(), keys.commsId(), keys.hasCommsId(), isP2p(keys.op()),
            keys.op(), keys.dtype(), keys.elements(), 0, k.startNs(), k.endNs(), TraceCollective.Found.KERNEL);
      }
      String op = CommKernels.op(k.name());
      return new TraceCollective(TraceGroup.UNNAMED, -1, 0, false, CommKernels.isP2p(op), op, "", 0, 0,
          k.startNs(), k.endNs(), TraceCollective.Found.KERNEL);
    }

    /**
     * gloo's collectives: each runs as a {@code gloo:<op>} annotation on a worker thread of its group's pool, and
     * the trace names no group. Every gloo group starts its pool of {@value #GLOO_THREADS_PER_GROUP} threads when
     * it is made, in the order of {@code pg_config}, so the threads, in the order the system numbered them, fall
     * into the groups' pools in that order. When the threads seen are not exactly that many (a pool idle for the
     * whole trace), which thread serves which group cannot be told and gloo's work is left out.
     */
    private List<TraceCollective> glooCollectives(RankEvents r, boolean ownInfo) {
      List<PgConfig> glooGroups = ownInfo ? pgConfig.stream()
          .filter(g -> g.backend().isEmpty() || g.backend().contains("gloo")).toList() : List.of();
      TreeSet<Long> workers = new TreeSet<>();
      for (CpuOp w : r.glooWork) {
        if (!r.issuingThreads.contains(w.tid)) {
          workers.add(w.tid);
        }
      }
      if (glooGroups.isEmpty() || workers.size() != GLOO_THREADS_PER_GROUP * glooGroups.size()) {
        notes.add("gloo's work runs on " + workers.size() + " worker threads for " + glooGroups.size()
            + " gloo groups in distributedInfo: which thread serves which group cannot be told, so gloo's "
            + "collectives are left out");
        return List.of();
      }
      Map<Long, PgConfig> groupOfThread = new HashMap<>();
      int i = 0;
      for (long tid : workers) {
        groupOfThread.put(tid, glooGroups.get(i++ / GLOO_THREADS_PER_GROUP));
      }
      Map<String, ArrayDeque<CpuOp>> issued = new HashMap<>();
      r.c10dOps.sort(Comparator.comparingLong(o -> o.tsNs));
      for (CpuOp op : r.c10dOps) {
        issued.computeIfAbsent(family(op.name.substring("c10d::".length())), k -> new ArrayDeque<>()).add(op);
      }
      List<CpuOp> work = new ArrayList<>(r.glooWork);
      work.sort(Comparator.comparingLong(o -> o.tsNs));
      List<TraceCollective> out = new ArrayList<>();
      for (CpuOp w : work) {
        PgConfig g = groupOfThread.get(w.tid);
        if (g == null) {
          // gloo's send/recv run on the calling thread and name no peer group: not joined.
          continue;
        }
        String op = w.name.substring("gloo:".length());
        long issuedAt = 0;
        // The op that enqueued this work: the oldest of its kind not yet matched, issued before the work began.
        ArrayDeque<CpuOp> queue = issued.get(family(op));
        if (queue != null && !queue.isEmpty() && queue.peekFirst().tsNs <= w.tsNs) {
          issuedAt = queue.pollFirst().tsNs;
        }
        TraceGroup group = groups.computeIfAbsent(g.name() + "\u0000" + g.desc() + "\u0000" + g.ranks(),
            k -> new TraceGroup(g.name(), g.desc(), g.ranks()));
        out.add(new TraceCollective(group, -1, 0, false, isP2p(op), op, "", 0, issuedAt, w.tsNs, w.tsNs + w.durNs,
            TraceCollective.Found.GLOO_WORK));
      }
      return out;
    }

    private long longValue(JsonParser p) throws IOException {
      JsonToken t = p.currentToken();
      if (t == JsonToken.VALUE_NUMBER_INT) {
        return p.getValueAsLong(-1);
      }
      if (t == JsonToken.VALUE_NUMBER_FLOAT) {
        return (long) p.getDoubleValue();
      }
      if (t == JsonToken.VALUE_STRING) {
        String s = stripQuotes(p.getText().trim());
        try {
          return Long.parseLong(s);
        } catch (NumberFormatException e) {
          return -1;
        }
      }
      p.skipChildren();
      return -1;
    }

    private List<Integer> ranks(JsonParser p) throws IOException {
      if (p.currentToken() == JsonToken.VALUE_STRING) {
        return parseRanks(p.getText());
      }
      if (p.currentToken() != JsonToken.START_ARRAY) {
        p.skipChildren();
        return List.of();
      }
      List<Integer> out = new ArrayList<>();
      for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY && t != null; t = p.nextToken()) {
        if (t == JsonToken.VALUE_NUMBER_INT) {
          out.add(p.getIntValue());
        } else {
          p.skipChildren();
        }
      }
      return out;
    }
  }

  private static long firstTime(TraceCollective c) {
    return c.issuedNs() != 0 ? c.issuedNs() : c.startNs();
  }

  /** "[0, 1, 2]" (PyTorch cuts long lists short; the numbers given are kept). */
  static List<Integer> parseRanks(String text) {
    List<Integer> out = new ArrayList<>();
    Matcher m = NUMBER.matcher(text);
    while (m.find()) {
      try {
        out.add(Integer.parseInt(m.group()));
      } catch (NumberFormatException e) {
        return List.of();
      }
    }
    return out;
  }

  /** Kineto may print a string value with its quotes ("\"0\"", kineto#1482). */
  private static String stripQuotes(String s) {
    if (s != null && s.length() >= 2 && s.charAt(0) == '"' && s.charAt(s.length() - 1) == '"') {
      return s.substring(1, s.length() - 1);
    }
    return s;
  }

  private static boolean isP2p(String op) {
    String o = family(op);
    return o.equals("send") || o.equals("recv") || o.equals("sendrecv") || o.equals("recvanysource");
  }

  /** An op's letters, lower case: "allreduce" of "all_reduce", "allreduce_" and "AllReduce". */
  static String family(String op) {
    return NOT_LETTER.matcher(op).replaceAll("").toLowerCase(Locale.ROOT);
  }
}
