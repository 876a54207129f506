package dev.frdiag.readers.nccl;

import static dev.frdiag.readers.nccl.Ascii.allDigits;
import static dev.frdiag.readers.nccl.Ascii.digits;
import static dev.frdiag.readers.nccl.Ascii.isDigit;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The lines that tell of a failure: WARN lines, each classified into an event with its fault domain and an
 * explanation, and the INFO lines that echo one (NCCLCHECK's {@code file.cc:line -> result} as an error passes up,
 * the proxy's teardown notice). Also narrows the version from how IB lines are spelled.
 */
final class WarnLines {
  private static final Pattern IB_COMPLETION = Pattern.compile(
      "NET/IB ?: Got completion from peer (\\S+) with (?:error |status=)(\\d+),? opcode[ =](\\d+),?"
          + " len[ =](\\d+),? vendor err (\\d+)(?: \\(([^)]*)\\))?(.*)");
  private static final Pattern IB_ASYNC = Pattern.compile("NET/IB ?: (?:(\\S+):(\\d+) )?"
      + "(Got async event ?: |Got async error event ?: ?|async fatal event(?: on (?:CQ|QP) \\(\\S+\\))?: )(.*)");
  private static final Pattern CUDA_FAILURE = Pattern.compile("Cuda failure (?:(\\d+) )?'([^']*)'.*");
  private static final Pattern SOCKET_PEER =
      Pattern.compile("(?:Call to recv from|Call to send to|Connection closed by remote peer) (\\S+)");
  private static final Pattern QP_DEV = Pattern.compile("on dev (\\S+?),");
  /** libfabric's log line: {@code libfabric:PID:SECONDS::PROVIDER:SUBSYSTEM:FUNCTION():LINE<LEVEL> MESSAGE}. */
  private static final Pattern LIBFABRIC = Pattern.compile(
      "libfabric:(\\d{1,10}):\\d+::(\\w+):\\w+:[\\w.]*\\(\\):\\d+<warn> err: (\\d+), message: (.*?)"
          + "(?: My EFA addr: .*?)?(?: My host id: (\\S+))?(?: Peer EFA addr: (\\S+))?(?: Peer host id: (\\S+))?"
          + "(?: \\((\\d+)\\))?\\s*");
  private static final Pattern OFI_COMPLETION = Pattern.compile(
      "NET/OFI Request (?:\\S+ )?completed with error\\. RC: (-?\\d+)\\. Error: (.*?)\\. Completed length.*");

  private final LinePrefix prefix;
  private final VersionClues clues;
  private final Events events;

  WarnLines(LinePrefix prefix, VersionClues clues, Events events) {
    this.prefix = prefix;
    this.clues = clues;
    this.events = events;
  }

  /** Takes the INFO message at {@code ms} that starts with {@code '['}: the proxy's teardown notice, if it is one. */
  void serviceThread(String s, int ms) {
    if (s.startsWith("[Service thread] Connection closed by localRank", ms)) {
      events.add(NcclEventKind.TEARDOWN, FaultDomain.NOISE, "", "", null,
          "a local rank's proxy connection closed during teardown; a consequence, not a cause");
    }
  }

  /** Takes the WARN message at {@code ms}. */
  void warn(String s, int ms) {
    String host = host();
    String gpu = gpu();
    String msg = s.substring(ms);
    String location = prefix.location();
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
    if (msg.startsWith("NET/OFI")) {
      Matcher m = OFI_COMPLETION.matcher(msg);
      if (m.matches()) {
        // The AWS OFI plugin's completion error: libfabric failed a transfer. The line names no peer.
        events.add(NcclEventKind.NET_PLUGIN_COMPLETION_ERROR, FaultDomain.PEER_PATH, "", "", null,
            "AWS OFI completion error on " + host + " (RC " + m.group(1) + ": " + m.group(2) + ")");
        return;
      }
    }
    if (msg.contains("Call to ibv_modify_qp failed")) {
      Matcher d = QP_DEV.matcher(msg);
      events.add(NcclEventKind.IB_QP_SETUP_FAILED, FaultDomain.FABRIC, "", d.find() ? d.group(1) : "", null,
          "a queue pair could not be brought up on " + host + ": RoCE GID or routing, or NICs on rails that cannot"
              + " reach each other (try NCCL_CROSS_NIC=0/1); errno 110 is a timeout");
    } else if (msg.contains("Connection closed by remote peer")) {
      String peer = socketPeer(msg);
      events.add(NcclEventKind.SOCKET_CLOSED_BY_PEER, FaultDomain.DEAD_PEER, peer, "", null,
          "the process at " + peer + " closed its socket: usually that peer died; look for its own error first");
    } else if (msg.contains("Call to recv from") || msg.contains("Call to send to")) {
      String peer = socketPeer(msg);
      events.add(NcclEventKind.SOCKET_IO_FAILED, FaultDomain.DEAD_PEER, peer, "", null,
          "a socket to " + peer + " failed (" + msg.substring(msg.lastIndexOf(':') + 1).trim()
              + "): usually that peer died");
    } else if (msg.startsWith("NET/Socket : peer") && msg.contains("message truncated")) {
      String peer = msg.substring(18, Math.max(18, msg.indexOf(' ', 18)));
      events.add(NcclEventKind.SOCKET_MESSAGE_TRUNCATED, FaultDomain.MISMATCH, peer, "", null,
          "ranks disagree on a message size with " + peer + ": the program issued different collectives");
    } else if (msg.contains("Socket recv failed while polling for opId")) {
      events.add(NcclEventKind.PROXY_FAILURE, FaultDomain.DEAD_PEER, "", "", null,
          "the proxy of another local rank went away: that rank most likely failed first");
    } else if (msg.startsWith("[Proxy Service") && msg.contains("Failed to execute operation")) {
      events.add(NcclEventKind.PROXY_FAILURE, FaultDomain.SECONDARY, "", "", null,
          "a proxy operation failed on " + (prefix.pid() < 0 ? host : host + " [" + prefix.device() + "]")
              + ": a consequence of the error before it");
    } else if (msg.startsWith("Cuda failure")) {
      Matcher m = CUDA_FAILURE.matcher(msg);
      String what = m.matches() ? m.group(2) : msg.substring(12).trim();
      String code = m.matches() && m.group(1) != null ? " " + m.group(1) : "";
      events.add(NcclEventKind.CUDA_FAILURE, FaultDomain.GPU, "", "", null,
          (what.equals("out of memory") ? "out of GPU memory" : "CUDA error" + code + " '" + what + "'")
              + " on " + gpu);
    } else if (msg.startsWith("Failed to CUDA calloc")) {
      events.add(NcclEventKind.CUDA_ALLOC_FAILED, FaultDomain.GPU, "", "", null,
          "out of GPU memory on " + gpu + " while NCCL allocated "
              + msg.substring(21).trim());
    } else if (msg.startsWith("Failed to bind NVLink SHARP")) {
      events.add(NcclEventKind.NVLS_BIND_FAILED, FaultDomain.GPU, "", "", null,
          "NVLink SHARP multicast memory could not be bound on " + host
              + ": Fabric Manager or NVSwitch problem (NCCL_NVLS_ENABLE=0 avoids it)");
    } else if (msg.startsWith("P2P is disabled between NVLINK connected GPUs")) {
      events.add(NcclEventKind.P2P_DISABLED, FaultDomain.GPU, "", "", null,
          "peer-to-peer is disabled between NVLink-connected GPUs on " + host
              + ": an NVLink fault or a container without P2P");
    } else if (msg.startsWith("Mismatched NCCL version")) {
      events.add(NcclEventKind.VERSION_MISMATCH, FaultDomain.MISMATCH, "", "", null,
          "ranks run different NCCL versions: " + msg);
    } else if (msg.startsWith("Duplicate GPU detected")) {
      events.add(NcclEventKind.DUPLICATE_GPU, FaultDomain.CONFIG, "", "", null,
          "two ranks share one GPU (CUDA_VISIBLE_DEVICES / local rank mapping): " + msg);
    } else if (msg.startsWith("Error while creating shared memory segment")
        || msg.startsWith("Error while attaching to shared memory segment")
        || msg.contains("unable to allocate shared memory")) {
      // NCCL's shared-memory transport between the processes of one host (shmutils.cc): /dev/shm full or too small
      // (a container's 64 MB default), a problem of that host, not of the program or the fabric.
      events.add(NcclEventKind.OTHER_WARN, FaultDomain.NODE_NETWORK, "", "", null,
          "NCCL could not set up its shared-memory transport on " + host + " (" + msg.strip() + "): /dev/shm full "
              + "or too small for NCCL's segments");
    } else if (msg.startsWith("Failed to open libibverbs")) {
      // ibvwrap.cc: no verbs library, so no IB transport; NCCL goes on over sockets (NET/Socket follows).
      events.add(NcclEventKind.OTHER_WARN, FaultDomain.NOISE, "", "", null,
          "no InfiniBand verbs library on " + host + ": NCCL uses sockets");
    } else if (msg.contains("encountered a fatal error")) {
      events.add(NcclEventKind.COMM_FATAL_ERROR, FaultDomain.SECONDARY, "", "", null,
          "NCCL failed the communicator after an earlier error: " + msg);
    } else if ((msg.contains("Plugin") || msg.contains("plugin")) && (msg.contains("No plugin")
        || msg.contains("not found") || msg.contains("ould not find") || msg.contains("Failed to find")
        || msg.contains("cannot open shared object") || msg.contains("using internal"))) {
      // Net/tuner/profiler plugin lookups warn when no plugin is installed; NCCL then uses its own.
      events.add(NcclEventKind.OTHER_WARN, FaultDomain.NOISE, "", "", null, "plugin notice: " + msg);
    } else {
      events.add(NcclEventKind.OTHER_WARN, FaultDomain.UNKNOWN, "", "", null, "unclassified WARN: " + msg);
    }
  }

  /**
   * Takes a line of libfabric's own log at {@code at} (the network plugin's provider, e.g. EFA), if it reports a
   * completion error. The EFA provider names both ends by EC2 instance id ("My host id", "Peer host id"), so the
   * event names the reporting host by it. A failed completion towards a peer looks the same whether the peer's
   * process is gone (its endpoint destroyed) or the path to it failed, hence {@link FaultDomain#PEER_PATH}.
   * Returns whether the line was one.
   */
  boolean libfabric(String s, int at) {
    Matcher m = LIBFABRIC.matcher(s).region(at, s.length());
    if (!m.matches()) {
      return false;
    }
    String host = orEmpty(m.group(5));
    String peer = m.group(7) != null && !m.group(7).equals("N/A") ? m.group(7) : orEmpty(m.group(6));
    String provider = m.group(2).toUpperCase(Locale.ROOT);
    events.add(NcclEventKind.NET_PLUGIN_COMPLETION_ERROR, FaultDomain.PEER_PATH, host.equals("N/A") ? "" : host,
        (int) Math.min(Long.parseLong(m.group(1)), Integer.MAX_VALUE), peer,
        provider + " completion error towards " + (peer.isEmpty() ? "a peer" : "peer host " + peer) + " (err "
            + m.group(3) + ": " + m.group(4).trim() + (m.group(8) == null ? "" : ", provider error " + m.group(8))
            + ")");
    return true;
  }

  private static String orEmpty(String s) {
    return s == null ? "" : s;
  }

  /** Takes an INFO message at {@code ms} that starts with a lower-case letter: an error passed up, if it is one. */
  void propagation(String s, int ms) {
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
    events.add(NcclEventKind.ERROR_PROPAGATION, FaultDomain.SECONDARY, "", "", null,
        "NCCL error " + result + " (" + resultName(result) + ") passed up at " + s.substring(ms, sp));
  }

  private void ibCompletion(Matcher m, boolean coreIb) {
    String host = host();
    long lineNumber = prefix.lineNumber();
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
    events.add(NcclEventKind.IB_COMPLETION_ERROR, domain, peer, c.hca(), c, why);
  }

  private void ibAsync(Matcher m, boolean coreIb) {
    String host = host();
    long lineNumber = prefix.lineNumber();
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
    events.add(NcclEventKind.IB_ASYNC_EVENT, domain, "", nic, null, why);
  }

  /** The printing host, or words for it when the line has no prefix (a WARN quoted by PyTorch). */
  private String host() {
    return prefix.host().isEmpty() ? "the reporting host" : prefix.host();
  }

  /** "GPU 3 of host (pid 42)", or words for it when the line has no prefix. */
  private String gpu() {
    return prefix.pid() < 0 ? "a GPU of the reporting host"
        : "GPU " + prefix.device() + " of " + prefix.host() + " (pid " + prefix.pid() + ")";
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

  /** NCCL's name of an {@code ncclResult_t}. */
  private static String resultName(int result) {
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
}
