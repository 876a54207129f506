package dev.frdiag.readers.context;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NicBinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.ib.IbFinding;
import dev.frdiag.readers.ib.IbSnapshot;
import dev.frdiag.readers.ib.IbWindow;
import dev.frdiag.readers.nccl.ChannelTransport;
import dev.frdiag.readers.nccl.CollMismatch;
import dev.frdiag.readers.nccl.NcclCommunicator;
import dev.frdiag.readers.nccl.NcclEvent;
import dev.frdiag.readers.nccl.NcclLog;
import dev.frdiag.readers.nccl.NcclNic;
import dev.frdiag.readers.nccl.NcclRank;
import dev.frdiag.readers.nccl.NcclTopology;
import dev.frdiag.readers.nccl.OpCountProgress;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reduces what a node's NCCL logs and InfiniBand counter windows say to the wire's {@link ContextFinding}s and
 * {@link NicBinding}s, grouped per node, so the diagnosis weighs them without knowing any parser. The other lines
 * of a node's logs (the driver's Xid lines, processes that died, NCCL RAS reports, ...) are
 * {@link NodeLogFindings}' to reduce.
 */
public final class ContextFindings {
  /** Lead events kept per log: the first few by cause say all a verdict needs. */
  static final int MAX_EVENTS = 20;

  private ContextFindings() {}

  /** The findings of one NCCL log, per host it names. */
  public static Map<String, List<ContextFinding>> fromNccl(NcclLog log) {
    Map<String, List<ContextFinding>> byHost = new TreeMap<>();
    int kept = 0;
    for (NcclEvent e : log.eventsByCause()) {
      if (!e.domain().isLead() || kept >= MAX_EVENTS) {
        continue;
      }
      ContextFinding.Kind kind = switch (e.domain()) {
        case GPU -> ContextFinding.Kind.GPU_FAULT;
        case NODE_NETWORK -> ContextFinding.Kind.LOCAL_NIC_FAULT;
        case FABRIC -> ContextFinding.Kind.LINK_FAULT;
        case DEAD_PEER -> ContextFinding.Kind.DEAD_PEER;
        case PEER_PATH -> ContextFinding.Kind.PEER_PATH_ERROR;
        default -> null;
      };
      if (kind == null) {
        continue;
      }
      kept++;
      ContextFinding.Builder f = ContextFinding.newBuilder().setKind(kind).setHost(orEmpty(e.host()))
          .setRank(rankOf(log, e)).setDevice(e.device()).setNic(orEmpty(e.nic())).setPeer(orEmpty(e.peer()))
          .setDetail((e.explanation() == null || e.explanation().isEmpty() ? "" : e.explanation() + ": ")
              + "\"" + e.line().strip() + "\"")
          .setSource(log.source() + ":" + e.lineNumber());
      if (e.timestamp() != null) {
        f.setTimeNs(e.timestamp().toEpochSecond(ZoneOffset.UTC) * 1_000_000_000L + e.timestamp().getNano());
      }
      byHost.computeIfAbsent(orEmpty(e.host()), h -> new ArrayList<>()).add(f.build());
    }
    for (ContextFinding f : launchLag(log)) {
      byHost.computeIfAbsent(f.getHost(), h -> new ArrayList<>()).add(f);
    }
    for (ContextFinding f : opMismatches(log)) {
      byHost.computeIfAbsent(f.getHost(), h -> new ArrayList<>()).add(f);
    }
    return byHost;
  }

  /**
   * Members of a communicator whose COLL lines show a different collective than their peers at one opCount, one
   * finding per divergent member. As in {@link #launchLag}, the rank in the communicator is the global rank only on
   * the log's largest communicator.
   */
  static List<ContextFinding> opMismatches(NcclLog log) {
    int world = log.opCounts().stream().mapToInt(OpCountProgress::nranks).max().orElse(0);
    List<ContextFinding> out = new ArrayList<>();
    for (CollMismatch m : log.collMismatches()) {
      for (CollMismatch.Member d : m.divergent()) {
        OpCountProgress o = d.progress();
        out.add(ContextFinding.newBuilder().setKind(ContextFinding.Kind.OP_MISMATCH).setHost(o.host())
            .setRank(o.nranks() == world ? o.rank() : -1).setDevice(-1).setPid(Math.max(o.pid(), 0))
            .setDetail((o.rank() >= 0 ? "rank " + o.rank() : "a process on " + o.host()) + " of " + m.communicator()
                + " enqueued " + d.call().signature() + " at opCount " + Long.toHexString(m.opCount())
                + (m.majority().isEmpty() ? " where its peers enqueued other collectives"
                    : " where its peers enqueued " + m.majority()) + " (NCCL COLL lines)")
            .setSource(log.source() + ":" + d.call().line()).build());
      }
    }
    return out;
  }

  /**
   * Processes whose COLL lines ({@code NCCL_DEBUG_SUBSYS=COLL}, printed as each collective is enqueued) stop at a
   * lower opCount than their communicator's peers reached: where each stopped launching collectives, as of the
   * log's end (what NCCL RAS's launch counts say of a live job). The communicator's rank is kept as the global rank only on
   * the log's largest communicator (the world's, whose ranks are the global ones in PyTorch's default group).
   */
  static List<ContextFinding> launchLag(NcclLog log) {
    Map<String, Long> front = new TreeMap<>();
    int world = 0;
    for (OpCountProgress o : log.opCounts()) {
      world = Math.max(world, o.nranks());
      if (!o.commId().isEmpty()) {
        front.merge(o.commId(), o.lastOpCount(), Math::max);
      }
    }
    List<ContextFinding> out = new ArrayList<>();
    for (OpCountProgress o : log.laggards()) {
      long peers = front.get(o.commId());
      out.add(ContextFinding.newBuilder().setKind(ContextFinding.Kind.ENQUEUE_LAG).setHost(o.host())
          .setRank(o.nranks() == world ? o.rank() : -1).setDevice(-1).setPid(Math.max(o.pid(), 0))
          .setDetail("rank " + o.rank() + " of communicator " + o.commId() + " (" + o.nranks() + " ranks) last "
              + "launched " + o.lastCollective() + " opCount " + Long.toHexString(o.lastOpCount()) + " while its "
              + "peers reached opCount " + Long.toHexString(peers) + " (NCCL COLL lines)")
          .setSource(log.source() + ":" + o.lastLine()).build());
    }
    return out;
  }

  /**
   * Which GPU each rank of the log runs on and which NIC (and port) it sends and receives through, per host: ranks
   * from the largest communicator's Init lines, NICs from the {@code NET/IB : Using [N]mlx5_0:1/IB} line of the
   * host and the {@code via NET/IB/N} connection lines each rank printed on that communicator (the PXN proxy's
   * when the line names one). A rank no connection line places on a NIC is bound to none.
   */
  public static Map<String, List<NicBinding>> bindings(NcclLog log) {
    NcclCommunicator world = null;
    for (NcclCommunicator c : log.communicators()) {
      if (world == null || c.nranks() > world.nranks()) {
        world = c;
      }
    }
    Map<String, NcclNic> nicByIndex = new TreeMap<>();
    for (NcclNic n : log.nics()) {
      nicByIndex.putIfAbsent(n.host() + "|" + n.net() + "|" + n.index(), n);
    }
    Map<Integer, NcclNic> nicOfRank = new TreeMap<>();
    for (ChannelTransport t : log.transports()) {
      boolean onWorld = world == null || t.commId().equals(world.commId())
          || (t.commId().isEmpty() && log.communicators().size() == 1);
      if (t.kind() != ChannelTransport.Kind.NET || t.nic() < 0 || !onWorld) {
        continue;
      }
      NcclNic nic = nicByIndex.get(t.host() + "|" + t.net() + "|" + t.nic());
      int user = t.proxyRank() >= 0 ? t.proxyRank()
          : t.direction() == ChannelTransport.Direction.RECEIVE ? t.toRank() : t.fromRank();
      if (nic != null && user >= 0) {
        nicOfRank.putIfAbsent(user, nic);
      }
    }
    Map<String, List<NicBinding>> byHost = new TreeMap<>();
    for (NcclRank r : log.ranks().values()) {
      if (r.host() == null || r.host().isEmpty()) {
        continue;
      }
      NcclNic nic = nicOfRank.get(r.rank());
      NicBinding.Builder b = NicBinding.newBuilder().setRank(r.rank()).setCudaDevice(r.cudaDev())
          .setGpuBusId(r.busId() == null ? "" : r.busId());
      if (nic != null && nic.host().equals(r.host())) {
        b.setNic(nic.device()).setPort(Math.max(nic.port(), 0));
      }
      byHost.computeIfAbsent(r.host(), h -> new ArrayList<>()).add(b.build());
    }
    // NICs a host named but no rank was placed on are still its NICs.
    for (NcclNic n : log.nics()) {
      List<NicBinding> host = byHost.computeIfAbsent(n.host(), h -> new ArrayList<>());
      if (host.stream().noneMatch(b -> b.getNic().equals(n.device()))) {
        host.add(NicBinding.newBuilder().setRank(-1).setCudaDevice(-1).setNic(n.device())
            .setPort(Math.max(n.port(), 0)).build());
      }
    }
    return byHost;
  }

  /** The node's InfiniBand ports, as NIC bindings with no GPU: what the picture of a host shows with no NCCL log. */
  public static List<NicBinding> ports(IbSnapshot snapshot) {
    return snapshot.ports().keySet().stream().map(p -> NicBinding.newBuilder().setRank(-1).setCudaDevice(-1)
        .setNic(p.device()).setPort(p.port()).build()).toList();
  }

  /** The findings of one node's InfiniBand counter window. */
  public static List<ContextFinding> fromIb(IbWindow window, String host) {
    List<ContextFinding> out = new ArrayList<>();
    for (IbFinding f : window.findings()) {
      ContextFinding.Kind kind = switch (f.kind()) {
        case NIC_DISAPPEARED -> ContextFinding.Kind.LOCAL_NIC_FAULT;
        case PORT_DOWN, LINK_FLAP, LINK_ERRORS, RETRANSMISSION -> ContextFinding.Kind.LINK_FAULT;
        case CONGESTION -> ContextFinding.Kind.CONGESTION;
        case QUIET -> ContextFinding.Kind.QUIET;
        case NIC_APPEARED -> null;
      };
      if (kind == null) {
        continue;
      }
      out.add(ContextFinding.newBuilder().setKind(kind).setHost(host).setRank(-1).setDevice(-1)
          .setNic(f.port().device()).setPort(f.port().port()).setDetail(f.message())
          .setSource("infiniband/" + f.port().device() + "/ports/" + f.port().port()
              + (f.counter().isEmpty() ? "" : "/" + f.counter()))
          .build());
    }
    return out;
  }

  /**
   * One NodeContext per host of an NCCL log (offline analysis of logs gathered from several nodes); a log with no
   * failure still yields its hosts, with the log's notable facts, so "the log shows no failure" is evidence too.
   */
  public static List<NodeContext> nodes(String jobId, NcclLog log) {
    Map<String, List<ContextFinding>> byHost = fromNccl(log);
    Map<String, List<NicBinding>> bindings = bindings(log);
    for (String host : log.hosts()) {
      byHost.computeIfAbsent(host, h -> new ArrayList<>());
    }
    for (String host : bindings.keySet()) {
      byHost.computeIfAbsent(host, h -> new ArrayList<>());
    }
    List<ContextFinding> notes = new ArrayList<>();
    for (String line : log.summary().split("\n")) {
      // The parser's own summary says what matters in words: "flag: no RDMA NIC, Socket in use".
      if (line.startsWith("flag: ")) {
        notes.add(note(line.substring("flag: ".length()), log.source()));
      }
    }
    for (NcclTopology t : log.topologies()) {
      StringBuilder affinity = new StringBuilder("GPU to NIC affinity: ");
      t.closestNics().forEach((gpu, paths) -> paths.stream().findFirst().ifPresent(p -> affinity
          .append(gpu).append(p.gpuRank() >= 0 ? " (rank " + p.gpuRank() + ")" : "").append(" -> ").append(p.nic())
          .append(' ').append(p.type()).append(' ').append(p.bandwidth()).append(" GB/s; ")));
      notes.add(note(affinity.toString().replaceAll("; $", ""), log.source() + ":" + t.lineNumber()));
    }
    if (byHost.isEmpty() && (!notes.isEmpty() || log.showsHealthySetup())) {
      byHost.put("", new ArrayList<>());
    }
    List<NodeContext> out = new ArrayList<>();
    boolean first = true;
    for (Map.Entry<String, List<ContextFinding>> e : byHost.entrySet()) {
      List<NicBinding> nics = bindings.getOrDefault(e.getKey(), List.of());
      NodeContext.Builder node = NodeContext.newBuilder().setJobId(jobId).setHostname(e.getKey())
          .addAllFindings(e.getValue()).addAllNics(nics)
          .addAllRanks(nics.stream().filter(b -> b.getRank() >= 0).map(NicBinding::getRank).toList());
      if (log.showsHealthySetup()) {
        // Every node of the log carries it, so a node without it says its log was not all healthy.
        node.addFindings(ContextFinding.newBuilder().setKind(ContextFinding.Kind.HEALTHY_SETUP).setHost(e.getKey())
            .setRank(-1).setDevice(-1).setDetail("NCCL set its communicators up and no line reports trouble")
            .setSource(log.source()));
      }
      if (log.showsCleanTeardown()) {
        node.addFindings(ContextFinding.newBuilder().setKind(ContextFinding.Kind.CLEAN_TEARDOWN)
            .setHost(e.getKey()).setRank(-1).setDevice(-1)
            .setDetail("NCCL destroyed its communicators the normal way (Destroy COMPLETE)").setSource(log.source()));
      }
      if (first) {
        // Log-wide facts once, not per host.
        node.addAllFindings(notes);
        first = false;
      }
      out.add(node.build());
    }
    return out;
  }

  static ContextFinding note(String text, String source) {
    return ContextFinding.newBuilder().setKind(ContextFinding.Kind.NOTE).setRank(-1).setDevice(-1).setDetail(text)
        .setSource(source).build();
  }

  private static int rankOf(NcclLog log, NcclEvent e) {
    for (NcclRank r : log.ranks().values()) {
      if (r.pid() == e.pid() && orEmpty(r.host()).equals(orEmpty(e.host())) && r.pid() > 0) {
        return r.rank();
      }
    }
    return -1;
  }

  private static String orEmpty(String s) {
    return s == null ? "" : s;
  }
}
