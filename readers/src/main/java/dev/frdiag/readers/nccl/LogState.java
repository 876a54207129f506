package dev.frdiag.readers.nccl;

import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one parse has learnt so far, fed one line at a time. Not thread-safe; one instance per parse.
 *
 * <p>The hot path (every line) uses index arithmetic on the line and no regular expression: a line is first
 * searched for {@code " NCCL "}, the prefix is read backwards from there, and the message is dispatched on its first
 * characters. Regular expressions run only on the rare lines that already passed that dispatch.
 */
final class LogState {
  private static final int INFO = 0;
  private static final int WARN = 1;
  private static final int TRACE = 2;
  private static final int CALL = 3;
  /** NCCL formats into a 1,024-byte buffer; a quoted line carries at most this much. */
  private static final int MAX_QUOTE = 1024;

  private static final Pattern COMM = Pattern.compile(
      "(?:(ncclComm\\w*) )?comm (0x[0-9a-fA-F]+) rank (\\d+) nranks (\\d+) cudaDev (-?\\d+)(?: nvmlDev (-?\\d+))?"
          + " busId ([0-9a-fA-F]+)(.*?) - (Init START|Init COMPLETE|Destroy COMPLETE|Abort COMPLETE).*");
  private static final Pattern COMM_ID = Pattern.compile("commId (0x[0-9a-fA-F]+)");
  private static final Pattern TRANSPORT = Pattern.compile(
      "Channel (\\d+)(?:/(\\d+))? : (\\d+)\\[([0-9a-fA-Fx]+)\\] -> (\\d+)\\[([0-9a-fA-Fx]+)\\]"
          + " (?:\\[(send|receive)\\] )?via (.+?)\\s*");
  private static final Pattern RING = Pattern.compile("Ring (\\d+) : (-?\\d+) -> (\\d+) -> (-?\\d+).*");
  private static final Pattern TREE =
      Pattern.compile("\\[(\\d+)\\] (-?\\d+)/(-?\\d+)/(-?\\d+)->(-?\\d+)->(-?\\d+)");
  private static final Pattern NET_USING = Pattern.compile("NET/(\\S+?) ?: Using (.*)");
  private static final Pattern IB_DEVICE = Pattern.compile("\\[(\\d+)\\]([^\\s:\\[\\]]+):(\\d+)/(\\S+)");
  private static final Pattern SOCKET_DEVICE = Pattern.compile("\\[(\\d+)\\]([^\\s:\\[\\]]+):(\\S+)");
  private static final Pattern GDR = Pattern.compile(
      "GPU Direct RDMA (Enabled|Disabled) for GPU (\\S+) / HCA (\\S+) \\(distance (\\d+) [<>]=? (-?\\d+)\\).*");
  private static final Pattern SUMMARY = Pattern.compile("(\\d+) coll channels, (?:(\\d+) collnet channels, )?"
      + "(\\d+) nvls channels, (\\d+) p2p channels, (\\d+) p2p channels per peer.*");
  private static final Pattern IB_COMPLETION = Pattern.compile(
      "NET/IB ?: Got completion from peer (\\S+) with (?:error |status=)(\\d+),? opcode[ =](\\d+),?"
          + " len[ =](\\d+),? vendor err (\\d+)(?: \\(([^)]*)\\))?(.*)");
  private static final Pattern IB_ASYNC = Pattern.compile("NET/IB ?: (?:(\\S+):(\\d+) )?"
      + "(Got async event ?: |Got async error event ?: ?|async fatal event(?: on (?:CQ|QP) \\(\\S+\\))?: )(.*)");
  private static final Pattern CUDA_FAILURE = Pattern.compile("Cuda failure (?:(\\d+) )?'([^']*)'.*");
  private static final Pattern SOCKET_PEER =
      Pattern.compile("(?:Call to recv from|Call to send to|Connection closed by remote peer) (\\S+)");
  private static final Pattern QP_DEV = Pattern.compile("on dev (\\S+?),");

  private final String source;
  private final int maxEventsPerKind;
  private final int maxEntries;

  long lineNumber;
  long ncclLines;
  long recognizedLines;
  long pytorchLines;
  long malformedLines;
  private long dropped;

  // The prefix of the current line, read by readPrefix.
  private String host;
  private int pid;
  private int tid;
  private int device;
  private int level;
  private int messageStart;
  private int locationStart;
  private int locationEnd;
  private LocalDateTime timestamp;
  private String line;
  private boolean latin1;

  private final String[] hostCache = new String[16];
  private int hostCacheNext;
  private final Map<String, String> hosts = new HashMap<>();
  private final Map<ProcKey, Proc> procs = new LinkedHashMap<>();
  private final Proc[] recentProcs = new Proc[16];
  private int recentNext;

  private final Map<String, CommBuilder> comms = new LinkedHashMap<>();
  private final TreeMap<Integer, NcclRank> looseRanks = new TreeMap<>();
  private final List<NcclNic> nics = new ArrayList<>();
  private final Set<String> nicKeys = new HashSet<>();
  private boolean noIbDevice;
  private final List<ChannelTransport> transports = new ArrayList<>();
  private final List<RingNeighbours> rings = new ArrayList<>();
  private final List<TreeLinks> trees = new ArrayList<>();
  private final List<ChannelSummary> summaries = new ArrayList<>();
  private final List<GdrDecision> gdr = new ArrayList<>();
  private final List<NcclTopology> topologies = new ArrayList<>();
  private final Set<String> topologyHosts = new HashSet<>();
  private TopologyBuilder bareTopology;
  private boolean nvls;
  private boolean collNet;

  private final Map<NcclEventKind, List<NcclEvent>> events = new EnumMap<>(NcclEventKind.class);
  private final Map<NcclEventKind, Long> eventCounts = new EnumMap<>(NcclEventKind.class);

  private String banner;
  private String bannerBasis;
  private final VersionClues clues = new VersionClues();

  LogState(String source, int maxEventsPerKind, int maxEntries) {
    this.source = source;
    this.maxEventsPerKind = maxEventsPerKind;
    this.maxEntries = maxEntries;
  }

  /**
   * Takes the next line, without its line terminator. {@code latin1} says the line was decoded byte for byte from
   * ISO-8859-1 (fast, exact for the ASCII NCCL prints) and must be re-decoded as UTF-8 when quoted.
   */
  void accept(String s, boolean latin1) {
    lineNumber++;
    this.line = s;
    this.latin1 = latin1;
    try {
      int m = s.indexOf(" NCCL ");
      if (m >= 0 && readPrefix(s, m)) {
        ncclLines++;
        recognizedLines++;
        if (level != CALL) {
          Proc p = proc();
          p.lines++;
          if (level == WARN) {
            warn(s, messageStart, p);
          } else {
            info(s, messageStart, p);
          }
        }
        return;
      }
      bare(s);
    } catch (RuntimeException e) {
      // A line that looks like NCCL's but holds absurd values (numbers out of range…) must not end the parse.
      malformedLines++;
    }
  }

  // ---------------------------------------------------------------------------------------------- prefix

  /** Reads {@code [timestamp] host:pid:tid [dev] [file:line] NCCL LEVEL } backwards from {@code m}. */
  private boolean readPrefix(String s, int m) {
    int n = s.length();
    int at = m + 6;
    if (s.startsWith("INFO", at)) {
      level = INFO;
      at += 4;
    } else if (s.startsWith("WARN", at)) {
      level = WARN;
      at += 4;
    } else if (s.startsWith("TRACE", at)) {
      level = TRACE;
      at += 5;
    } else if (s.startsWith("CALL", at)) {
      level = CALL;
      at += 4;
    } else {
      return false;
    }
    if (at < n) {
      if (s.charAt(at) != ' ') {
        return false;
      }
      at++;
    }
    messageStart = at;
    if (level == CALL) {
      // host:pid:tid NCCL CALL ncclSend(...): no device; only counted.
      return hostPidTid(s, m);
    }
    int close;
    locationStart = -1;
    locationEnd = -1;
    if (m > 0 && s.charAt(m - 1) == ']') {
      close = m - 1;
    } else {
      // WARN and TRACE put "file.cc:line" (TRACE also a time) between [dev] and NCCL.
      close = s.lastIndexOf("] ", m - 1);
      if (close < 0 || m - close > 256) {
        return false;
      }
      locationStart = close + 2;
      locationEnd = m;
    }
    int open = close - 1;
    while (open >= 0 && isDigit(s.charAt(open))) {
      open--;
    }
    if (open < 1 || open == close - 1 || close - open > 8 || s.charAt(open) != '[' || s.charAt(open - 1) != ' ') {
      return false;
    }
    device = (int) digits(s, open + 1, close);
    return hostPidTid(s, open - 1);
  }

  /** Reads {@code host:pid:tid} ending just before {@code end}, then the optional timestamp before it. */
  private boolean hostPidTid(String s, int end) {
    int i = end - 1;
    while (i >= 0 && isDigit(s.charAt(i))) {
      i--;
    }
    if (i < 0 || i == end - 1 || end - i > 11 || s.charAt(i) != ':') {
      return false;
    }
    long t = digits(s, i + 1, end);
    int pidEnd = i;
    i--;
    while (i >= 0 && isDigit(s.charAt(i))) {
      i--;
    }
    if (i < 0 || i == pidEnd - 1 || pidEnd - i > 11 || s.charAt(i) != ':') {
      return false;
    }
    long p = digits(s, i + 1, pidEnd);
    int hostEnd = i;
    i--;
    while (i >= 0 && isHostChar(s.charAt(i))) {
      i--;
    }
    int hostStart = i + 1;
    if (hostStart == hostEnd || t > Integer.MAX_VALUE || p > Integer.MAX_VALUE) {
      return false;
    }
    tid = (int) t;
    pid = (int) p;
    host = internHost(s, hostStart, hostEnd);
    timestamp = null;
    int noiseEnd = hostStart;
    if (hostStart >= 21 && s.charAt(hostStart - 1) == ' ' && s.charAt(hostStart - 2) == ']') {
      int open = s.lastIndexOf('[', hostStart - 2);
      if (open >= 0) {
        timestamp = timestamp(s, open + 1, hostStart - 2);
        if (timestamp != null) {
          noiseEnd = open;
        }
      }
    }
    if (timestamp != null) {
      clues.atLeast(26, "a timestamp before the line prefix", lineNumber);
    } else if (level == WARN) {
      clues.atMost(25, "WARN lines without a timestamp (timestamped by default from 2.26)", lineNumber);
    }
    if (noiseEnd > 0) {
      Proc pr = proc();
      if (pr.launcherRank < 0) {
        pr.launcherRank = launcherRank(s, noiseEnd);
      }
    }
    return true;
  }

  /** {@code YYYY-MM-DD HH:MM:SS[.fff…]} between {@code from} and {@code to}, or null. */
  private static LocalDateTime timestamp(String s, int from, int to) {
    if (to - from < 19 || s.charAt(from + 4) != '-' || s.charAt(from + 7) != '-' || s.charAt(from + 10) != ' '
        || s.charAt(from + 13) != ':' || s.charAt(from + 16) != ':') {
      return null;
    }
    for (int k : new int[] {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18}) {
      if (!isDigit(s.charAt(from + k))) {
        return null;
      }
    }
    int nanos = 0;
    if (to - from > 20 && s.charAt(from + 19) == '.') {
      int scale = 100_000_000;
      for (int k = from + 20; k < to && scale > 0 && isDigit(s.charAt(k)); k++) {
        nanos += (s.charAt(k) - '0') * scale;
        scale /= 10;
      }
    }
    try {
      return LocalDateTime.of((int) digits(s, from, from + 4), (int) digits(s, from + 5, from + 7),
          (int) digits(s, from + 8, from + 10), (int) digits(s, from + 11, from + 13),
          (int) digits(s, from + 14, from + 16), (int) digits(s, from + 17, from + 19), nanos);
    } catch (java.time.DateTimeException e) {
      return null;
    }
  }

  /** The rank a launcher tagged the line with: OpenMPI {@code [job,rank]<stdout>:}, or {@code [rank]}. */
  private static int launcherRank(String s, int noiseEnd) {
    int i = 0;
    while (i < noiseEnd && s.charAt(i) == ' ') {
      i++;
    }
    if (i >= noiseEnd || s.charAt(i) != '[') {
      return -1;
    }
    int close = s.indexOf(']', i);
    if (close < 0 || close >= noiseEnd || close - i > 24) {
      return -1;
    }
    int comma = s.indexOf(',', i);
    if (comma > 0 && comma < close) {
      // OpenMPI --tag-output: [jobid,rank]<stdout>:
      return s.startsWith("<std", close + 1) && allDigits(s, comma + 1, close) ? (int) digits(s, comma + 1, close)
          : -1;
    }
    return allDigits(s, i + 1, close) ? (int) digits(s, i + 1, close) : -1;
  }

  private String internHost(String s, int from, int to) {
    int len = to - from;
    for (String h : hostCache) {
      if (h != null && h.length() == len && s.regionMatches(from, h, 0, len)) {
        return h;
      }
    }
    String h = s.substring(from, to);
    if (hosts.size() < maxEntries) {
      h = hosts.computeIfAbsent(h, k -> k);
    }
    hostCache[hostCacheNext++ & (hostCache.length - 1)] = h;
    return h;
  }

  private Proc proc() {
    // Interleaved processes defeat a one-entry cache; hosts are interned, so a few identity checks do.
    for (Proc p : recentProcs) {
      if (p != null && p.pid == pid && p.host == host) {
        return p;
      }
    }
    Proc p;
    ProcKey key = new ProcKey(host, pid);
    p = procs.get(key);
    if (p == null) {
      p = new Proc(host, pid);
      if (procs.size() < maxEntries) {
        procs.put(key, p);
      } else {
        dropped++;
      }
    }
    recentProcs[recentNext++ & (recentProcs.length - 1)] = p;
    return p;
  }

  // ------------------------------------------------------------------------------------------------ INFO

  private void info(String s, int ms, Proc p) {
    int n = s.length();
    // Other threads of the process may print between the dump's lines; only the dumping thread's lines count.
    if (p.topology != null && p.topology.tid == tid) {
      if (!p.topology.accept(s, ms)) {
        closeTopology(p);
      } else {
        if (p.topology.complete()) {
          closeTopology(p);
        }
        return;
      }
    }
    if (ms >= n) {
      return;
    }
    char c = s.charAt(ms);
    if (c >= 'A' && c <= 'Z') {
      int colon = s.indexOf(':', ms);
      if (colon > ms && colon - ms <= 24 && s.startsWith(": opCount ", colon)) {
        coll(s, ms, colon, p);
        return;
      }
    }
    switch (c) {
      case 'C':
        if (s.startsWith("Channel ", ms)) {
          channel(s, ms, p);
        } else if (s.startsWith("CollNet ", ms) || s.startsWith("Connected Collnet", ms)) {
          collNet = true;
        } else if (s.startsWith("Connected all rings", ms)) {
          if (s.startsWith(", use ring PXN", ms + 19)) {
            clues.atLeast(24, "'Connected all rings, use ring PXN'", lineNumber);
          } else if (ms + 19 == n) {
            clues.atMost(23, "'Connected all rings' without the PXN/GDR suffix of 2.24+", lineNumber);
          }
        } else if (s.startsWith("Connected NVLS", ms)) {
          nvls = true;
        }
        return;
      case 'R':
        if (s.startsWith("Ring ", ms)) {
          ring(s, ms, p);
        }
        return;
      case 'T':
        if (s.startsWith("Trees", ms)) {
          trees(s, ms, p);
        }
        return;
      case 'N':
        if (s.startsWith("NET/", ms)) {
          net(s, ms, p);
        } else if (s.startsWith("NCCL version ", ms)) {
          banner(s, ms + 13, "banner at line ");
        } else if (s.startsWith("NVLS multicast support is available", ms) || s.startsWith("NVLS comm ", ms)) {
          nvls = true;
        }
        return;
      case 'U':
        if (s.startsWith("Using network ", ms)) {
          p.network = s.substring(ms + 14).trim();
        }
        return;
      case 'B':
        if (s.startsWith("Bootstrap : Using", ms)) {
          p.bootstrap = s.substring(ms + 17).trim();
          clues.atMost(23, "'Bootstrap : Using' (2.24+ writes 'Bootstrap: Using')", lineNumber);
        } else if (s.startsWith("Bootstrap: Using", ms)) {
          p.bootstrap = s.substring(ms + 16).trim();
          clues.atLeast(24, "'Bootstrap: Using' spelling", lineNumber);
        }
        return;
      case 'G':
        if (s.startsWith("GPU Direct RDMA ", ms)) {
          gdr(s, ms, p);
        }
        return;
      case '=':
        if (TopologyBuilder.isHeader(s, ms)) {
          p.topology = TopologyBuilder.start(s, ms, host, pid, tid, lineNumber);
        }
        return;
      case '[':
        if (s.startsWith("[Service thread] Connection closed by localRank", ms)) {
          event(NcclEventKind.TEARDOWN, FaultDomain.NOISE, "", "", null,
              "a local rank's proxy connection closed during teardown; a consequence, not a cause");
        }
        return;
      default:
        break;
    }
    if (c >= '0' && c <= '9') {
      if (s.startsWith(" coll channels, ", s.indexOf(' ', ms))) {
        summary(s, ms, p);
      }
      return;
    }
    if (s.startsWith("ncclComm", ms) || s.startsWith("comm 0x", ms)) {
      comm(s, ms, p);
      return;
    }
    if (c >= 'a' && c <= 'z') {
      propagation(s, ms);
    }
  }

  private void coll(String s, int ms, int colon, Proc p) {
    int n = s.length();
    int at = colon + 10;
    int sp = s.indexOf(' ', at);
    if (sp < 0) {
      return;
    }
    long opCount = hex(s, at, sp);
    int c = s.indexOf(" comm 0x", sp);
    if (opCount < 0 || c < 0) {
      return;
    }
    int cs = c + 6;
    int ce = s.indexOf(' ', cs);
    if (ce < 0) {
      ce = n;
    }
    int nranks = -1;
    int nr = s.indexOf("[nranks=", ce);
    if (nr >= 0) {
      int close = s.indexOf(']', nr);
      if (close > nr + 8 && allDigits(s, nr + 8, close)) {
        nranks = (int) digits(s, nr + 8, close);
      }
    }
    OpState st = null;
    for (OpState o : p.ops) {
      if (o.commPtr.length() == ce - cs && s.regionMatches(cs, o.commPtr, 0, ce - cs)) {
        st = o;
        break;
      }
    }
    if (st == null) {
      if (p.ops.size() >= 1024) {
        dropped++;
        return;
      }
      st = new OpState(s.substring(cs, ce));
      p.ops.add(st);
    }
    if (st.op.length() != colon - ms || !s.regionMatches(ms, st.op, 0, colon - ms)) {
      st.op = s.substring(ms, colon).intern();
    }
    st.lastOpCount = opCount;
    st.nranks = nranks;
    st.calls++;
    st.lastLine = lineNumber;
  }

  private void channel(String s, int ms, Proc p) {
    Matcher m = TRANSPORT.matcher(s).region(ms, s.length());
    if (!m.matches()) {
      return;
    }
    int from = Integer.parseInt(m.group(3));
    int to = Integer.parseInt(m.group(5));
    ChannelTransport.Direction dir = m.group(7) == null ? ChannelTransport.Direction.NONE
        : m.group(7).equals("send") ? ChannelTransport.Direction.SEND : ChannelTransport.Direction.RECEIVE;
    String via = m.group(8);
    int slash = via.indexOf('/');
    String head = slash < 0 ? via : via.substring(0, slash);
    ChannelTransport.Kind kind;
    String net = "";
    int nic = -1;
    int proxy = -1;
    switch (head) {
      case "P2P":
        kind = ChannelTransport.Kind.P2P;
        break;
      case "SHM":
        kind = ChannelTransport.Kind.SHM;
        break;
      case "NET":
        kind = ChannelTransport.Kind.NET;
        String[] parts = via.split("/");
        net = parts.length > 1 ? parts[1] : "";
        if (parts.length > 2) {
          String idx = parts[2];
          int paren = idx.indexOf('(');
          String number = paren < 0 ? idx : idx.substring(0, paren);
          if (allDigits(number, 0, number.length()) && !number.isEmpty()) {
            nic = (int) digits(number, 0, number.length());
          }
          int close = idx.indexOf(')', paren + 1);
          if (paren >= 0 && close > paren + 1 && allDigits(idx, paren + 1, close)) {
            proxy = (int) digits(idx, paren + 1, close);
          }
        }
        break;
      case "COLLNET":
        kind = ChannelTransport.Kind.COLLNET;
        collNet = true;
        break;
      default:
        kind = ChannelTransport.Kind.OTHER;
    }
    if (transports.size() < maxEntries) {
      transports.add(new ChannelTransport(host, pid, p.currentCommId, Integer.parseInt(m.group(1)), from,
          m.group(4), to, m.group(6), dir, kind, via, net, nic, proxy, via.contains("GDRDMA"), lineNumber));
    } else {
      dropped++;
    }
    boolean receive = dir == ChannelTransport.Direction.RECEIVE;
    rankEvidence(p, receive ? to : from, receive ? m.group(6) : m.group(4), "connection line " + lineNumber);
  }

  private void ring(String s, int ms, Proc p) {
    Matcher m = RING.matcher(s).region(ms, s.length());
    if (!m.matches()) {
      return;
    }
    int rank = Integer.parseInt(m.group(3));
    if (rings.size() < maxEntries) {
      rings.add(new RingNeighbours(host, pid, p.currentCommId, Integer.parseInt(m.group(1)),
          Integer.parseInt(m.group(2)), rank, Integer.parseInt(m.group(4))));
    } else {
      dropped++;
    }
    rankEvidence(p, rank, "", "ring line " + lineNumber);
  }

  private void trees(String s, int ms, Proc p) {
    Matcher m = TREE.matcher(s).region(ms, s.length());
    while (m.find()) {
      List<Integer> children = new ArrayList<>(3);
      for (int g = 2; g <= 4; g++) {
        int child = Integer.parseInt(m.group(g));
        if (child >= 0) {
          children.add(child);
        }
      }
      if (trees.size() < maxEntries) {
        trees.add(new TreeLinks(host, pid, p.currentCommId, Integer.parseInt(m.group(1)),
            Integer.parseInt(m.group(5)), children, Integer.parseInt(m.group(6))));
      } else {
        dropped++;
      }
    }
  }

  private void net(String s, int ms, Proc p) {
    if (s.startsWith("NET/IB : No device found", ms)) {
      noIbDevice = true;
      return;
    }
    Matcher m = NET_USING.matcher(s).region(ms, s.length());
    if (!m.matches()) {
      return;
    }
    String net = m.group(1);
    String list = m.group(2);
    int oob = list.indexOf("; OOB");
    if (oob >= 0) {
      list = list.substring(0, oob);
    }
    Matcher ib = IB_DEVICE.matcher(list);
    boolean any = false;
    while (ib.find()) {
      any = true;
      addNic(new NcclNic(host, net, Integer.parseInt(ib.group(1)), ib.group(2), Integer.parseInt(ib.group(3)),
          ib.group(4), ""));
    }
    if (!any) {
      Matcher sock = SOCKET_DEVICE.matcher(list);
      while (sock.find()) {
        addNic(new NcclNic(host, net, Integer.parseInt(sock.group(1)), sock.group(2), -1, "", sock.group(3)));
      }
    }
  }

  private void addNic(NcclNic nic) {
    // Every process of a host prints the same list; keep it once per host.
    if (nics.size() < maxEntries && nicKeys.add(nic.host() + "\0" + nic.net() + "\0" + nic.index())) {
      nics.add(nic);
    }
  }

  private void gdr(String s, int ms, Proc p) {
    Matcher m = GDR.matcher(s).region(ms, s.length());
    if (m.matches() && gdr.size() < maxEntries) {
      gdr.add(new GdrDecision(host, pid, m.group(2), m.group(3), m.group(1).equals("Enabled"),
          Integer.parseInt(m.group(4)), Integer.parseInt(m.group(5))));
    }
  }

  private void summary(String s, int ms, Proc p) {
    Matcher m = SUMMARY.matcher(s).region(ms, s.length());
    if (!m.matches()) {
      return;
    }
    int coll = Integer.parseInt(m.group(1));
    int cn = m.group(2) == null ? 0 : Integer.parseInt(m.group(2));
    int nv = Integer.parseInt(m.group(3));
    nvls |= nv > 0;
    collNet |= cn > 0;
    if (summaries.size() < maxEntries) {
      summaries.add(new ChannelSummary(host, pid, p.currentCommId, coll, cn, nv, Integer.parseInt(m.group(4)),
          Integer.parseInt(m.group(5))));
    }
  }

  private void comm(String s, int ms, Proc p) {
    Matcher m = COMM.matcher(s).region(ms, s.length());
    if (!m.matches()) {
      return;
    }
    String api = m.group(1);
    String ptr = m.group(2);
    int rank = Integer.parseInt(m.group(3));
    int nranks = Integer.parseInt(m.group(4));
    String what = m.group(9);
    boolean init = what.startsWith("Init");
    if (init) {
      if (api != null) {
        clues.atLeast(21, "Init lines start with the API name (" + api + ")", lineNumber);
      } else {
        clues.atMost(20, "Init lines without the API name", lineNumber);
      }
    }
    Matcher id = COMM_ID.matcher(m.group(8));
    CommRef ref = p.comms.get(ptr);
    String commId = id.find() ? id.group(1) : ref != null ? ref.commId : ptr + "@" + host + ":" + pid;
    if (nranks < 1 || rank >= nranks) {
      return;
    }
    CommBuilder cb = comms.get(commId);
    if (cb == null) {
      if (comms.size() >= maxEntries) {
        dropped++;
        return;
      }
      cb = new CommBuilder(commId, nranks);
      comms.put(commId, cb);
    }
    NcclRank.State state;
    switch (what) {
      case "Init START":
        state = NcclRank.State.INIT_STARTED;
        break;
      case "Init COMPLETE":
        state = NcclRank.State.INIT_COMPLETE;
        break;
      case "Destroy COMPLETE":
        state = NcclRank.State.DESTROYED;
        break;
      default:
        state = NcclRank.State.ABORTED;
    }
    NcclRank old = cb.ranks.get(rank);
    if (old == null || old.state().ordinal() <= state.ordinal()) {
      int nvml = m.group(6) != null ? Integer.parseInt(m.group(6)) : old != null ? old.nvmlDev() : -1;
      cb.ranks.put(rank, new NcclRank(rank, host, pid, Integer.parseInt(m.group(5)), nvml, m.group(7), state,
          what + " at line " + lineNumber));
    }
    if (p.comms.size() < 4096) {
      p.comms.put(ptr, new CommRef(commId, rank));
    }
    if (init) {
      p.currentCommId = commId;
    } else {
      event(NcclEventKind.TEARDOWN, FaultDomain.NOISE, "", "", null,
          "communicator " + commId + " rank " + rank + ": " + what.toLowerCase(java.util.Locale.ROOT));
    }
  }

  private void rankEvidence(Proc p, int rank, String dev, String evidence) {
    int nvml = allDigits(dev, 0, dev.length()) && !dev.isEmpty() && dev.length() < 6
        ? (int) digits(dev, 0, dev.length()) : -1;
    if (!p.currentCommId.isEmpty()) {
      CommBuilder cb = comms.get(p.currentCommId);
      if (cb != null && rank < cb.nranks && !cb.ranks.containsKey(rank)) {
        cb.ranks.put(rank, new NcclRank(rank, host, pid, -1, nvml, "", NcclRank.State.SEEN, evidence));
      }
    } else if (!looseRanks.containsKey(rank) && looseRanks.size() < maxEntries) {
      looseRanks.put(rank, new NcclRank(rank, host, pid, -1, nvml, "", NcclRank.State.SEEN, evidence));
    }
  }

  private void propagation(String s, int ms) {
    // "transport/net.cc:1302 -> 6", optionally followed by " [Progress Thread]".
    int sp = s.indexOf(' ', ms);
    if (sp < 0 || !s.startsWith("-> ", sp + 1)) {
      return;
    }
    int colon = s.lastIndexOf(':', sp);
    if (colon <= ms || !allDigits(s, colon + 1, sp) || colon + 1 == sp || s.lastIndexOf('.', colon) < ms) {
      return;
    }
    int rs = sp + 4;
    int re = rs;
    while (re < s.length() && isDigit(s.charAt(re))) {
      re++;
    }
    if (re == rs) {
      return;
    }
    int result = (int) Math.min(digits(s, rs, re), Integer.MAX_VALUE);
    event(NcclEventKind.ERROR_PROPAGATION, FaultDomain.SECONDARY, "", "", null,
        "NCCL error " + result + " (" + resultName(result) + ") passed up at " + s.substring(ms, sp));
  }

  private void banner(String s, int from, String basis) {
    int end = from;
    while (end < s.length() && s.charAt(end) > ' ' && s.charAt(end) != ',') {
      end++;
    }
    if (banner == null && end > from && from < s.length() && isDigit(s.charAt(from))) {
      banner = s.substring(from, end);
      bannerBasis = basis + lineNumber;
    }
  }

  // ------------------------------------------------------------------------------------------------ WARN

  private void warn(String s, int ms, Proc p) {
    String msg = s.substring(ms);
    String location = locationStart >= 0 ? s.substring(locationStart, locationEnd).trim() : "";
    boolean coreIb = location.contains("net_ib");
    if (msg.startsWith("NET/IB")) {
      Matcher m = IB_COMPLETION.matcher(msg);
      if (m.matches()) {
        ibCompletion(m, coreIb);
        return;
      }
      m = IB_ASYNC.matcher(msg);
      if (m.matches()) {
        ibAsync(m, coreIb);
        return;
      }
    }
    if (msg.contains("Call to ibv_modify_qp failed")) {
      Matcher d = QP_DEV.matcher(msg);
      event(NcclEventKind.IB_QP_SETUP_FAILED, FaultDomain.FABRIC, "", d.find() ? d.group(1) : "", null,
          "a queue pair could not be brought up on " + host + ": RoCE GID or routing, or NICs on rails that cannot"
              + " reach each other (try NCCL_CROSS_NIC=0/1); errno 110 is a timeout");
    } else if (msg.contains("Connection closed by remote peer")) {
      String peer = socketPeer(msg);
      event(NcclEventKind.SOCKET_CLOSED_BY_PEER, FaultDomain.DEAD_PEER, peer, "", null,
          "the process at " + peer + " closed its socket: usually that peer died; look for its own error first");
    } else if (msg.contains("Call to recv from") || msg.contains("Call to send to")) {
      String peer = socketPeer(msg);
      event(NcclEventKind.SOCKET_IO_FAILED, FaultDomain.DEAD_PEER, peer, "", null,
          "a socket to " + peer + " failed (" + msg.substring(msg.lastIndexOf(':') + 1).trim()
              + "): usually that peer died");
    } else if (msg.startsWith("NET/Socket : peer") && msg.contains("message truncated")) {
      String peer = msg.substring(18, Math.max(18, msg.indexOf(' ', 18)));
      event(NcclEventKind.SOCKET_MESSAGE_TRUNCATED, FaultDomain.MISMATCH, peer, "", null,
          "ranks disagree on a message size with " + peer + ": the program issued different collectives");
    } else if (msg.contains("Socket recv failed while polling for opId")) {
      event(NcclEventKind.PROXY_FAILURE, FaultDomain.DEAD_PEER, "", "", null,
          "the proxy of another local rank went away: that rank most likely failed first");
    } else if (msg.startsWith("[Proxy Service") && msg.contains("Failed to execute operation")) {
      event(NcclEventKind.PROXY_FAILURE, FaultDomain.SECONDARY, "", "", null,
          "a proxy operation failed on " + host + " [" + device + "]: a consequence of the error before it");
    } else if (msg.startsWith("Cuda failure")) {
      Matcher m = CUDA_FAILURE.matcher(msg);
      String what = m.matches() ? m.group(2) : msg.substring(12).trim();
      String code = m.matches() && m.group(1) != null ? " " + m.group(1) : "";
      event(NcclEventKind.CUDA_FAILURE, FaultDomain.GPU, "", "", null,
          (what.equals("out of memory") ? "out of GPU memory" : "CUDA error" + code + " '" + what + "'")
              + " on GPU " + device + " of " + host + " (pid " + pid + ")");
    } else if (msg.startsWith("Failed to CUDA calloc")) {
      event(NcclEventKind.CUDA_ALLOC_FAILED, FaultDomain.GPU, "", "", null,
          "out of GPU memory on GPU " + device + " of " + host + " (pid " + pid + ") while NCCL allocated "
              + msg.substring(21).trim());
    } else if (msg.startsWith("Failed to bind NVLink SHARP")) {
      event(NcclEventKind.NVLS_BIND_FAILED, FaultDomain.GPU, "", "", null,
          "NVLink SHARP multicast memory could not be bound on " + host
              + ": Fabric Manager or NVSwitch problem (NCCL_NVLS_ENABLE=0 avoids it)");
    } else if (msg.startsWith("P2P is disabled between NVLINK connected GPUs")) {
      event(NcclEventKind.P2P_DISABLED, FaultDomain.GPU, "", "", null,
          "peer-to-peer is disabled between NVLink-connected GPUs on " + host
              + ": an NVLink fault or a container without P2P");
    } else if (msg.startsWith("Mismatched NCCL version")) {
      event(NcclEventKind.VERSION_MISMATCH, FaultDomain.MISMATCH, "", "", null,
          "ranks run different NCCL versions: " + msg);
    } else if (msg.startsWith("Duplicate GPU detected")) {
      event(NcclEventKind.DUPLICATE_GPU, FaultDomain.CONFIG, "", "", null,
          "two ranks share one GPU (CUDA_VISIBLE_DEVICES / local rank mapping): " + msg);
    } else if (msg.contains("encountered a fatal error")) {
      event(NcclEventKind.COMM_FATAL_ERROR, FaultDomain.SECONDARY, "", "", null,
          "NCCL failed the communicator after an earlier error: " + msg);
    } else if ((msg.contains("Plugin") || msg.contains("plugin")) && (msg.contains("No plugin")
        || msg.contains("not found") || msg.contains("ould not find") || msg.contains("Failed to find")
        || msg.contains("cannot open shared object") || msg.contains("using internal"))) {
      // Net/tuner/profiler plugin lookups warn when no plugin is installed; NCCL then uses its own.
      event(NcclEventKind.OTHER_WARN, FaultDomain.NOISE, "", "", null, "plugin notice: " + msg);
    } else {
      event(NcclEventKind.OTHER_WARN, FaultDomain.UNKNOWN, "", "", null, "unclassified WARN: " + msg);
    }
  }

  private void ibCompletion(Matcher m, boolean coreIb) {
    String peer = m.group(1);
    int status = (int) Math.min(Long.parseLong(m.group(2)), Integer.MAX_VALUE);
    String rest = m.group(7);
    IbCompletion c = new IbCompletion(status, IbCompletion.statusName(status), Long.parseLong(m.group(3)),
        Long.parseLong(m.group(4)), Long.parseLong(m.group(5)), m.group(6) == null ? "" : m.group(6),
        after(rest, "localGid"), after(rest, "remoteGids"), after(rest, "hca"));
    if (coreIb) {
      String msg = m.group();
      if (msg.startsWith("NET/IB: ")) {
        clues.atLeast(22, "'NET/IB: Got completion' spelling", lineNumber);
      } else if (msg.contains(" with status=")) {
        clues.atLeast(20, "'with status=' in IB completion lines", lineNumber);
        clues.atMost(21, "'NET/IB : Got completion' spelling", lineNumber);
      } else {
        clues.atMost(19, "'with error N,' in IB completion lines", lineNumber);
      }
    }
    String who = "status " + status + " " + c.statusName() + ", vendor err " + c.vendorErr();
    FaultDomain domain;
    String why;
    switch (status) {
      case 12:
        domain = FaultDomain.FABRIC;
        why = "transport retry counter exceeded (" + who + "): the NIC of " + host + " got no ACK from "
            + addressOf(peer) + "; the link, a switch or RoCE routing between them is the lead";
        break;
      case 20:
        domain = FaultDomain.FABRIC;
        why = "response timeout (" + who + ") towards " + addressOf(peer) + ": the path between them";
        break;
      case 13:
        domain = FaultDomain.DEAD_PEER;
        why = "receiver-not-ready retries exceeded (" + who + "): " + addressOf(peer)
            + " posted no receive in time; its process is stuck or gone";
        break;
      case 4:
        domain = FaultDomain.NODE_NETWORK;
        why = "local protection error (" + who + ") on " + host + ": the NIC could not access the local buffer;"
            + " GPUDirect RDMA / peer memory (nvidia-peermem, dma-buf, ACS/IOMMU) on " + host + " is the lead";
        break;
      case 8:
      case 10:
        domain = FaultDomain.NODE_NETWORK;
        why = (status == 8 ? "local" : "remote") + " access error (" + who + ") reported by " + host
            + ": memory registration / GPUDirect RDMA on " + host + " is the lead";
        break;
      case 1:
      case 2:
      case 19:
        domain = FaultDomain.NODE_NETWORK;
        why = "NIC error on " + host + " (" + who + ")";
        break;
      case 5:
        domain = FaultDomain.SECONDARY;
        why = "work request flushed (" + who + "): the queue pair was already in error; a consequence of an"
            + " earlier failure";
        break;
      default:
        domain = FaultDomain.UNKNOWN;
        why = "IB completion error (" + who + ") with " + addressOf(peer);
    }
    event(NcclEventKind.IB_COMPLETION_ERROR, domain, peer, c.hca(), c, why);
  }

  private void ibAsync(Matcher m, boolean coreIb) {
    String nic = m.group(1) == null ? "" : m.group(1) + ":" + m.group(2);
    String kind = m.group(3);
    String what = m.group(4).trim();
    if (coreIb) {
      if (kind.startsWith("Got async error event") || kind.startsWith("async fatal")) {
        clues.atLeast(23, "'Got async error event' / 'async fatal event'", lineNumber);
      } else if (nic.isEmpty()) {
        clues.atMost(19, "async events without a device name", lineNumber);
      } else {
        clues.atLeast(20, "async events with a device name", lineNumber);
        clues.atMost(22, "'Got async event' spelling", lineNumber);
      }
    }
    String where = nic.isEmpty() ? host : nic + " of " + host;
    FaultDomain domain;
    String why;
    if (what.startsWith("port error")) {
      domain = FaultDomain.FABRIC;
      why = "port error on " + where + ": the link went down (cable, optic or switch port)";
    } else if (kind.startsWith("async fatal") || what.contains("catastrophic") || what.contains("CQ error")
        || what.contains("work queue")) {
      domain = FaultDomain.NODE_NETWORK;
      why = "fatal NIC event on " + where + ": " + what;
    } else {
      domain = FaultDomain.NOISE;
      why = "IB event on " + where + ": " + what
          + (what.startsWith("port active") ? " (after a port error on the same port: a link flap)" : "");
    }
    event(NcclEventKind.IB_ASYNC_EVENT, domain, "", nic, null, why);
  }

  private static String socketPeer(String msg) {
    Matcher m = SOCKET_PEER.matcher(msg);
    return m.find() ? m.group(1) : "";
  }

  private static String addressOf(String peer) {
    int lt = peer.indexOf('<');
    return lt < 0 ? peer : peer.substring(0, lt);
  }

  /** The token after {@code key} (with or without a space), or empty. */
  private static String after(String s, String key) {
    int k = s.indexOf(key);
    if (k < 0) {
      return "";
    }
    int from = k + key.length();
    while (from < s.length() && s.charAt(from) == ' ') {
      from++;
    }
    int to = from;
    while (to < s.length() && s.charAt(to) != ' ') {
      to++;
    }
    return s.substring(from, to);
  }

  private void event(NcclEventKind kind, FaultDomain domain, String peer, String nic, IbCompletion ib,
      String explanation) {
    long count = eventCounts.merge(kind, 1L, Long::sum);
    if (count > maxEventsPerKind) {
      return;
    }
    String quoted = latin1 ? new String(line.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8)
        : line;
    if (quoted.length() > MAX_QUOTE) {
      quoted = quoted.substring(0, MAX_QUOTE);
    }
    String location = locationStart >= 0 ? line.substring(locationStart, locationEnd).trim() : "";
    events.computeIfAbsent(kind, k -> new ArrayList<>()).add(new NcclEvent(kind, domain, timestamp, host, pid,
        tid, device, lineNumber, quoted, location, peer, nic, ib, explanation));
  }

  // ------------------------------------------------------------------------------------------- bare lines

  private void bare(String s) {
    if (bareTopology != null) {
      if (bareTopology.accept(s, 0)) {
        recognizedLines++;
        if (bareTopology.complete()) {
          closeBareTopology();
        }
        return;
      }
      closeBareTopology();
    }
    int k = s.indexOf("NCCL");
    if (k < 0) {
      int i = 0;
      while (i < s.length() && s.charAt(i) == ' ') {
        i++;
      }
      if (TopologyBuilder.isHeader(s, i)) {
        // A dump pasted without its "host:pid:tid [dev] NCCL INFO " prefixes.
        bareTopology = TopologyBuilder.start(s, i, "", -1, -1, lineNumber);
        if (bareTopology != null) {
          recognizedLines++;
        }
      }
      return;
    }
    for (; k >= 0; k = s.indexOf("NCCL", k + 4)) {
      if (k >= 12 && s.startsWith("ProcessGroupNCCL", k - 12)) {
        pytorchLines++;
        recognizedLines++;
        // PyTorch names the NCCL it loaded: "ProcessGroupNCCL environments: NCCL version: 2.21.5, …" and
        // "NCCL error: …, NCCL version 2.20.5".
        int v = s.indexOf("NCCL version", k);
        if (v >= 0) {
          int from = v + 12;
          while (from < s.length() && (s.charAt(from) == ':' || s.charAt(from) == ' ')) {
            from++;
          }
          banner(s, from, "PyTorch's ProcessGroupNCCL message at line ");
        }
        return;
      }
      if (s.startsWith("NCCL version ", k) && k + 13 < s.length() && isDigit(s.charAt(k + 13))) {
        banner(s, k + 13, "banner at line ");
        recognizedLines++;
        return;
      }
    }
  }

  private void closeTopology(Proc p) {
    TopologyBuilder t = p.topology;
    p.topology = null;
    // Every rank of a host prints the same dump; keep the first per host.
    if (topologies.size() < maxEntries && topologyHosts.add(t.host)) {
      topologies.add(topologyClues(t.build()));
    }
  }

  /** Node ids are {@code GPU/4000} up to 2.20 and {@code GPU/0-4000} (system id first) from 2.21. */
  private NcclTopology topologyClues(NcclTopology t) {
    for (NcclTopology.Node n : t.nodes()) {
      if (n.type().equals("GPU")) {
        if (n.id().indexOf('-') > 0) {
          clues.atLeast(21, "topology ids with a system id (" + n.name() + ")", t.lineNumber());
        } else {
          clues.atMost(20, "topology ids without a system id (" + n.name() + ")", t.lineNumber());
        }
        break;
      }
    }
    return t;
  }

  private void closeBareTopology() {
    TopologyBuilder t = bareTopology;
    bareTopology = null;
    if (topologies.size() < maxEntries) {
      topologies.add(topologyClues(t.build()));
    }
  }

  // ------------------------------------------------------------------------------------------------ finish

  NcclLog finish(long bytes, boolean truncatedLastLine) {
    if (bareTopology != null) {
      closeBareTopology();
    }
    for (Proc p : procs.values()) {
      if (p.topology != null) {
        closeTopology(p);
      }
    }
    List<NcclCommunicator> communicators = new ArrayList<>();
    for (CommBuilder cb : comms.values()) {
      communicators.add(new NcclCommunicator(cb.commId, cb.nranks, cb.ranks));
    }
    // Launcher tags name ranks NCCL lines never placed, e.g. a rank whose connection lines fell outside the excerpt.
    if (comms.isEmpty()) {
      Set<ProcKey> placed = new HashSet<>();
      for (NcclRank r : looseRanks.values()) {
        placed.add(new ProcKey(r.host(), r.pid()));
      }
      for (Proc p : procs.values()) {
        if (p.launcherRank >= 0 && !looseRanks.containsKey(p.launcherRank) && !placed.contains(new ProcKey(p.host, p.pid))
            && looseRanks.size() < maxEntries) {
          looseRanks.put(p.launcherRank, new NcclRank(p.launcherRank, p.host, p.pid, -1, -1, "",
              NcclRank.State.SEEN, "launcher tag [" + p.launcherRank + "]"));
        }
      }
    }
    List<NcclProcess> processes = new ArrayList<>();
    List<OpCountProgress> opCounts = new ArrayList<>();
    for (Proc p : procs.values()) {
      processes.add(new NcclProcess(p.host, p.pid, p.launcherRank, p.lines, p.bootstrap, p.network));
      for (OpState o : p.ops) {
        CommRef ref = p.comms.get(o.commPtr);
        opCounts.add(new OpCountProgress(ref == null ? "" : ref.commId, o.commPtr, p.host, p.pid,
            ref == null ? -1 : ref.rank, o.nranks, o.lastOpCount, o.op, o.calls, o.lastLine));
      }
    }
    List<NcclEvent> all = new ArrayList<>();
    for (List<NcclEvent> list : events.values()) {
      all.addAll(list);
    }
    all.sort(java.util.Comparator.comparingLong(NcclEvent::lineNumber));
    NcclVersion version = banner != null ? new NcclVersion(banner, false, bannerBasis)
        : clues.infer();
    boolean capped = dropped > 0;
    for (Map.Entry<NcclEventKind, Long> e : eventCounts.entrySet()) {
      capped |= e.getValue() > maxEventsPerKind;
    }
    return new NcclLog(source, lineNumber, bytes, ncclLines, pytorchLines, malformedLines, truncatedLastLine,
        version, processes, nics, noIbDevice, communicators, looseRanks, transports, rings, trees, summaries, nvls,
        collNet, topologies, gdr, opCounts, all, eventCounts, capped);
  }

  // ------------------------------------------------------------------------------------------------ helpers

  static String resultName(int result) {
    switch (result) {
      case 0: return "ncclSuccess";
      case 1: return "ncclUnhandledCudaError";
      case 2: return "ncclSystemError";
      case 3: return "ncclInternalError";
      case 4: return "ncclInvalidArgument";
      case 5: return "ncclInvalidUsage";
      case 6: return "ncclRemoteError";
      case 7: return "ncclInProgress";
      default: return "result " + result;
    }
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private static boolean isHostChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
        || c == '.';
  }

  private static boolean allDigits(String s, int from, int to) {
    for (int i = from; i < to; i++) {
      if (!isDigit(s.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  /** The decimal number in {@code [from, to)}, which the caller checked holds only digits (at most 18). */
  private static long digits(String s, int from, int to) {
    long v = 0;
    for (int i = from; i < to && i < from + 18; i++) {
      v = v * 10 + (s.charAt(i) - '0');
    }
    return v;
  }

  /** The hex number in {@code [from, to)}, or -1 when it is not one. */
  private static long hex(String s, int from, int to) {
    if (to <= from || to - from > 15) {
      return -1;
    }
    long v = 0;
    for (int i = from; i < to; i++) {
      int d = Character.digit(s.charAt(i), 16);
      if (d < 0) {
        return -1;
      }
      v = (v << 4) | d;
    }
    return v;
  }

  // ------------------------------------------------------------------------------------------------ state

  /** A process's identity. */
  private record ProcKey(String host, int pid) {}

  /** Where a process's {@code comm 0x…} pointer belongs. */
  private record CommRef(String commId, int rank) {}

  /** What one process has shown so far. */
  private static final class Proc {
    final String host;
    final int pid;
    int launcherRank = -1;
    long lines;
    String bootstrap = "";
    String network = "";
    /** The communicator this process last printed an Init line for; later setup lines belong to it. */
    String currentCommId = "";
    final Map<String, CommRef> comms = new HashMap<>();
    final List<OpState> ops = new ArrayList<>(4);
    TopologyBuilder topology;

    Proc(String host, int pid) {
      this.host = host;
      this.pid = pid;
    }
  }

  /** The last COLL line of one process on one communicator. */
  private static final class OpState {
    final String commPtr;
    String op = "";
    long lastOpCount;
    int nranks;
    long calls;
    long lastLine;

    OpState(String commPtr) {
      this.commPtr = commPtr;
    }
  }

  /** One communicator being assembled. */
  private static final class CommBuilder {
    final String commId;
    final int nranks;
    final TreeMap<Integer, NcclRank> ranks = new TreeMap<>();

    CommBuilder(String commId, int nranks) {
      this.commId = commId;
      this.nranks = nranks;
    }
  }
}
