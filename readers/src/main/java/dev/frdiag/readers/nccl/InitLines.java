package dev.frdiag.readers.nccl;

import static dev.frdiag.readers.nccl.Ascii.allDigits;
import static dev.frdiag.readers.nccl.Ascii.digits;

import dev.frdiag.readers.nccl.ProcessState.CommRef;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The INFO lines NCCL prints while it sets a communicator up ({@code NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET}): version
 * banner, bootstrap and network, NICs, {@code comm 0x… rank … - Init COMPLETE}, the channels, rings and trees it
 * built, the transport of each connection, GPU Direct RDMA decisions, NVLS and CollNet. Lines reach here already
 * dispatched on their first character; regular expressions run only on those few lines.
 */
final class InitLines {
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
  /** A process holds a handful of communicators; far more pointers than this is not a real job. */
  private static final int MAX_COMMS_PER_PROCESS = 4096;

  private final LinePrefix prefix;
  private final VersionClues clues;
  private final Communicators comms;
  private final Events events;
  private final int maxEntries;

  private final List<NcclNic> nics = new ArrayList<>();
  private final Set<String> nicKeys = new HashSet<>();
  private boolean noIbDevice;
  private final List<ChannelTransport> transports = new ArrayList<>();
  private final List<RingNeighbours> rings = new ArrayList<>();
  private final List<TreeLinks> trees = new ArrayList<>();
  private final List<ChannelSummary> summaries = new ArrayList<>();
  private final List<GdrDecision> gdr = new ArrayList<>();
  private boolean nvls;
  private boolean collNet;
  private long dropped;

  InitLines(LinePrefix prefix, VersionClues clues, Communicators comms, Events events, int maxEntries) {
    this.prefix = prefix;
    this.clues = clues;
    this.comms = comms;
    this.events = events;
    this.maxEntries = maxEntries;
  }

  /**
   * Takes the INFO message at {@code ms} of process {@code p} when its first characters make it an init line
   * (whether or not it then parses); false when it is not one.
   */
  boolean accept(String s, int ms, ProcessState p) {
    int n = s.length();
    char c = s.charAt(ms);
    switch (c) {
      case 'C':
        if (s.startsWith("Channel ", ms)) {
          channel(s, ms, p);
        } else if (s.startsWith("CollNet ", ms) || s.startsWith("Connected Collnet", ms)) {
          collNet = true;
        } else if (s.startsWith("Connected all rings", ms)) {
          if (s.startsWith(", use ring PXN", ms + 19)) {
            clues.atLeast(24, "'Connected all rings, use ring PXN'", prefix.lineNumber());
          } else if (ms + 19 == n) {
            clues.atMost(23, "'Connected all rings' without the PXN/GDR suffix of 2.24+", prefix.lineNumber());
          }
        } else if (s.startsWith("Connected NVLS", ms)) {
          nvls = true;
        }
        return true;
      case 'R':
        if (s.startsWith("Ring ", ms)) {
          ring(s, ms, p);
        }
        return true;
      case 'T':
        if (s.startsWith("Trees", ms)) {
          trees(s, ms, p);
        }
        return true;
      case 'N':
        if (s.startsWith("NET/", ms)) {
          net(s, ms);
        } else if (s.startsWith("NCCL version ", ms)) {
          clues.banner(s, ms + 13, "banner at line ", prefix.lineNumber());
        } else if (s.startsWith("NVLS multicast support is available", ms) || s.startsWith("NVLS comm ", ms)) {
          nvls = true;
        }
        return true;
      case 'U':
        if (s.startsWith("Using network ", ms)) {
          p.network = s.substring(ms + 14).trim();
        }
        return true;
      case 'B':
        if (s.startsWith("Bootstrap : Using", ms)) {
          p.bootstrap = s.substring(ms + 17).trim();
          clues.atMost(23, "'Bootstrap : Using' (2.24+ writes 'Bootstrap: Using')", prefix.lineNumber());
        } else if (s.startsWith("Bootstrap: Using", ms)) {
          p.bootstrap = s.substring(ms + 16).trim();
          clues.atLeast(24, "'Bootstrap: Using' spelling", prefix.lineNumber());
        }
        return true;
      case 'G':
        if (s.startsWith("GPU Direct RDMA ", ms)) {
          gdr(s, ms);
        }
        return true;
      default:
        break;
    }
    if (c >= '0' && c <= '9') {
      if (s.startsWith(" coll channels, ", s.indexOf(' ', ms))) {
        summary(s, ms, p);
      }
      return true;
    }
    if (s.startsWith("ncclComm", ms) || s.startsWith("comm 0x", ms)) {
      comm(s, ms, p);
      return true;
    }
    return false;
  }

  private void channel(String s, int ms, ProcessState p) {
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
    long line = prefix.lineNumber();
    if (transports.size() < maxEntries) {
      transports.add(new ChannelTransport(p.host, p.pid, p.currentCommId, Integer.parseInt(m.group(1)), from,
          m.group(4), to, m.group(6), dir, kind, via, net, nic, proxy, via.contains("GDRDMA"), line));
    } else {
      dropped++;
    }
    boolean receive = dir == ChannelTransport.Direction.RECEIVE;
    rankSeen(p, receive ? to : from, receive ? m.group(6) : m.group(4), "connection line " + line);
  }

  private void ring(String s, int ms, ProcessState p) {
    Matcher m = RING.matcher(s).region(ms, s.length());
    if (!m.matches()) {
      return;
    }
    int rank = Integer.parseInt(m.group(3));
    if (rings.size() < maxEntries) {
      rings.add(new RingNeighbours(p.host, p.pid, p.currentCommId, Integer.parseInt(m.group(1)),
          Integer.parseInt(m.group(2)), rank, Integer.parseInt(m.group(4))));
    } else {
      dropped++;
    }
    rankSeen(p, rank, "", "ring line " + prefix.lineNumber());
  }

  private void trees(String s, int ms, ProcessState p) {
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
        trees.add(new TreeLinks(p.host, p.pid, p.currentCommId, Integer.parseInt(m.group(1)),
            Integer.parseInt(m.group(5)), children, Integer.parseInt(m.group(6))));
      } else {
        dropped++;
      }
    }
  }

  private void net(String s, int ms) {
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
    String host = prefix.host();
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

  private void gdr(String s, int ms) {
    Matcher m = GDR.matcher(s).region(ms, s.length());
    if (m.matches() && gdr.size() < maxEntries) {
      gdr.add(new GdrDecision(prefix.host(), prefix.pid(), m.group(2), m.group(3), m.group(1).equals("Enabled"),
          Integer.parseInt(m.group(4)), Integer.parseInt(m.group(5))));
    }
  }

  private void summary(String s, int ms, ProcessState p) {
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
      summaries.add(new ChannelSummary(p.host, p.pid, p.currentCommId, coll, cn, nv, Integer.parseInt(m.group(4)),
          Integer.parseInt(m.group(5))));
    }
  }

  private void comm(String s, int ms, ProcessState p) {
    Matcher m = COMM.matcher(s).region(ms, s.length());
    if (!m.matches()) {
      return;
    }
    long line = prefix.lineNumber();
    String api = m.group(1);
    String ptr = m.group(2);
    int rank = Integer.parseInt(m.group(3));
    int nranks = Integer.parseInt(m.group(4));
    String what = m.group(9);
    boolean init = what.startsWith("Init");
    if (init) {
      if (api != null) {
        clues.atLeast(21, "Init lines start with the API name (" + api + ")", line);
      } else {
        clues.atMost(20, "Init lines without the API name", line);
      }
    }
    Matcher id = COMM_ID.matcher(m.group(8));
    CommRef ref = p.comms.get(ptr);
    String commId = id.find() ? id.group(1) : ref != null ? ref.commId() : ptr + "@" + p.host + ":" + p.pid;
    if (nranks < 1 || rank >= nranks) {
      return;
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
    if (!comms.rankLine(commId, nranks, rank, p.host, p.pid, m.group(5), m.group(6), m.group(7), state,
        what + " at line " + line)) {
      return;
    }
    if (p.comms.size() < MAX_COMMS_PER_PROCESS) {
      p.comms.put(ptr, new CommRef(commId, rank));
    }
    if (init) {
      p.currentCommId = commId;
    } else {
      events.add(state == NcclRank.State.DESTROYED ? NcclEventKind.COMM_DESTROYED : NcclEventKind.TEARDOWN,
          FaultDomain.NOISE, "", "", null,
          "communicator " + commId + " rank " + rank + ": " + what.toLowerCase(Locale.ROOT));
    }
  }

  private void rankSeen(ProcessState p, int rank, String dev, String evidence) {
    int nvml = allDigits(dev, 0, dev.length()) && !dev.isEmpty() && dev.length() < 6
        ? (int) digits(dev, 0, dev.length()) : -1;
    comms.seen(p.currentCommId, rank, p.host, p.pid, nvml, evidence);
  }

  List<NcclNic> nics() {
    return nics;
  }

  /** True when NCCL said {@code NET/IB : No device found}. */
  boolean noIbDevice() {
    return noIbDevice;
  }

  List<ChannelTransport> transports() {
    return transports;
  }

  List<RingNeighbours> rings() {
    return rings;
  }

  List<TreeLinks> trees() {
    return trees;
  }

  List<ChannelSummary> summaries() {
    return summaries;
  }

  List<GdrDecision> gdrDecisions() {
    return gdr;
  }

  boolean nvls() {
    return nvls;
  }

  boolean collNet() {
    return collNet;
  }

  /** Entries not kept because a list was full. */
  long dropped() {
    return dropped;
  }
}
