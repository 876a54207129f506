package dev.frdiag.readers.context;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.ib.IbFinding;
import dev.frdiag.readers.ib.IbWindow;
import dev.frdiag.readers.nccl.NcclEvent;
import dev.frdiag.readers.nccl.NcclLog;
import dev.frdiag.readers.nccl.NcclRank;
import dev.frdiag.readers.nccl.NcclTopology;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reduces what the NCCL log parser and the InfiniBand counter window found to the wire's {@link ContextFinding}s,
 * grouped per node, so the diagnosis weighs them without knowing either parser.
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
    return byHost;
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
    for (String host : log.hosts()) {
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
      NodeContext.Builder node = NodeContext.newBuilder().setJobId(jobId).setHostname(e.getKey())
          .addAllFindings(e.getValue());
      if (log.showsHealthySetup()) {
        // Every node of the log carries it, so a node without it says its log was not all healthy.
        node.addFindings(ContextFinding.newBuilder().setKind(ContextFinding.Kind.HEALTHY_SETUP).setHost(e.getKey())
            .setRank(-1).setDevice(-1).setDetail("NCCL set its communicators up and no line reports trouble")
            .setSource(log.source()));
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

  private static ContextFinding note(String text, String source) {
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
