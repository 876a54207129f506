package dev.frdiag.readers.kineto;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import dev.frdiag.readers.kineto.RankEvents.CpuOp;
import dev.frdiag.readers.kineto.RankEvents.Kernel;
import dev.frdiag.readers.kineto.RankEvents.Keys;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.TreeMap;
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
 *
 * <p>How a rank's events make its collectives once its file is read is {@link RankEvents}'. What is left here is one
 * state machine over one token stream, and one class on purpose: the fields of the event being read, reused across
 * the millions of events a trace holds; the dispatch on each key of an event and of its args; and the few shared
 * strings ({@code X}, {@code M}, the categories) compared by identity, so that the events skipped make no strings
 * (docs/PERFORMANCE.md, "Profiler traces"). Every per-event method reads and sets those fields; split across
 * classes, they would hand them through calls or objects at every event, for no second concept to separate.
 */
public final class KinetoTraceReader {
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
  record PgConfig(String name, String desc, String backend, List<Integer> ranks) {}

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
      List<TraceCollective> collectives = r.collectives(ownInfo ? pgConfig : List.of(), groups, notes);
      List<TraceCollective> absolute = new ArrayList<>(collectives.size());
      for (TraceCollective c : collectives) {
        absolute.add(c.shifted(baseNs));
      }
      return new RankTrace(rank, from, ownInfo ? worldSize : 0, ownInfo ? backend : "", ownInfo ? host : "",
          absolute, r.compute.toArray(baseNs), r.communication.toArray(baseNs));
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

  static boolean isP2p(String op) {
    String o = family(op);
    return o.equals("send") || o.equals("recv") || o.equals("sendrecv") || o.equals("recvanysource");
  }

  /** An op's letters, lower case: "allreduce" of "all_reduce", "allreduce_" and "AllReduce". */
  static String family(String op) {
    return NOT_LETTER.matcher(op).replaceAll("").toLowerCase(Locale.ROOT);
  }
}
