package dev.frdiag.readers.context;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NicBinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.exit.ProcessExit;
import dev.frdiag.readers.gpu.GpuHealth;
import dev.frdiag.readers.ib.IbFinding;
import dev.frdiag.readers.ib.IbSnapshot;
import dev.frdiag.readers.ib.IbWindow;
import dev.frdiag.readers.kernel.XidKind;
import dev.frdiag.readers.kernel.XidLine;
import dev.frdiag.readers.nccl.ChannelTransport;
import dev.frdiag.readers.nccl.CollMismatch;
import dev.frdiag.readers.nccl.NcclCommunicator;
import dev.frdiag.readers.nccl.NcclEvent;
import dev.frdiag.readers.nccl.NcclLog;
import dev.frdiag.readers.nccl.NcclNic;
import dev.frdiag.readers.nccl.NcclRank;
import dev.frdiag.readers.nccl.NcclTopology;
import dev.frdiag.readers.nccl.OpCountProgress;
import dev.frdiag.readers.nccltests.NcclTestsRun;
import dev.frdiag.readers.horovod.StallInspectorReader;
import dev.frdiag.readers.progress.StepProgress;
import dev.frdiag.readers.pytorch.CollectiveError;
import dev.frdiag.readers.pytorch.DesyncReportReader;
import dev.frdiag.readers.ras.RasReport;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reduces what the readers found (NCCL logs, InfiniBand counter windows, kernel Xid lines, process exits, NCCL RAS
 * reports) to the wire's {@link ContextFinding}s, grouped per node, so the diagnosis weighs them without knowing
 * any parser.
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

  /**
   * The findings of a kernel log's Xid lines, one per GPU, fault and process. A cleanup (Xid 45) counts as the
   * fault it names. A device or application fault counts only on a GPU the log shows a process using (a pid on
   * any of that GPU's lines): a fault on a GPU no process used may not be the job's, so it is only a note.
   */
  public static List<ContextFinding> fromXids(List<XidLine> lines) {
    Map<String, XidLine> withProcess = new TreeMap<>();
    for (XidLine x : lines) {
      if (x.pid() > 0) {
        withProcess.putIfAbsent(x.host() + "|" + x.pciBusId(), x);
      }
    }
    Map<String, ContextFinding> out = new java.util.LinkedHashMap<>();
    for (XidLine x : lines) {
      XidKind kind = XidKind.of(x.cause());
      if (kind != XidKind.DEVICE && kind != XidKind.APPLICATION) {
        continue;
      }
      XidLine user = x.pid() > 0 ? x : withProcess.get(x.host() + "|" + x.pciBusId());
      String key = x.host() + "|" + x.pciBusId() + "|" + x.cause() + "|" + (user == null ? -1 : user.pid());
      if (out.containsKey(key)) {
        continue;
      }
      String what = XidKind.describe(x.cause()) + " on GPU " + x.pciBusId();
      String why = x.cause() != x.xid() ? ", as its Xid " + x.xid() + " cleanup names it" : "";
      ContextFinding.Builder f = ContextFinding.newBuilder().setHost(x.host()).setRank(-1).setDevice(-1)
          .setGpuBusId(x.pciBusId()).setSource(x.source());
      if (user == null) {
        out.put(key, f.setKind(ContextFinding.Kind.NOTE).setDetail(what + why + "; no process is named on that GPU,"
            + " so it may not be the job's: \"" + x.text() + "\"").build());
        continue;
      }
      String used = ", used by " + (user.process().isEmpty() ? "" : user.process() + " ") + "(pid " + user.pid() + ")";
      out.put(key, f.setKind(kind == XidKind.DEVICE ? ContextFinding.Kind.XID_DEVICE_FAULT
          : ContextFinding.Kind.XID_APPLICATION_FAULT).setPid(user.pid())
          .setDetail(what + used + why + ": \"NVRM: Xid (PCI:" + x.pciBusId() + "): " + x.xid() + ", " + x.text()
              + "\"").build());
    }
    return List.copyOf(out.values());
  }

  /**
   * The findings of processes that ended, one per process: those that died from outside or crashed
   * ({@link ProcessExit#fromOutside}); exits that follow a failure (SIGABRT, SIGTERM, a Ray worker aborted after its
   * own timeout) say nothing new. Of several reports of one process, the one that names the most (rank, host) is
   * kept.
   */
  public static List<ContextFinding> fromExits(List<ProcessExit> exits) {
    Map<String, ProcessExit> byProcess = new java.util.LinkedHashMap<>();
    for (ProcessExit e : exits) {
      if (!e.fromOutside()) {
        continue;
      }
      String key = e.pid() > 0 ? Long.toString(e.pid()) : e.host() + "|" + e.source();
      ProcessExit kept = byProcess.get(key);
      if (kept == null || (kept.rank() < 0 && e.rank() >= 0) || (kept.host().isEmpty() && !e.host().isEmpty())) {
        byProcess.put(key, kept == null ? e : new ProcessExit(e.kind(), e.host().isEmpty() ? kept.host() : e.host(),
            e.pid(), e.rank() >= 0 ? e.rank() : kept.rank(), e.signal(), e.detail(), e.text(), e.source()));
      }
    }
    List<ContextFinding> out = new ArrayList<>();
    for (ProcessExit e : byProcess.values()) {
      // Who died is in the finding's fields (host, pid, rank) and in the quoted line.
      out.add(ContextFinding.newBuilder().setKind(ContextFinding.Kind.PROCESS_DIED).setHost(e.host())
          .setRank(e.rank()).setDevice(-1).setPid(Math.max(e.pid(), 0))
          .setDetail(e.detail() + ": \"" + e.text() + "\"").setSource(e.source()).build());
    }
    return out;
  }

  /**
   * The findings of {@code nvidia-smi -q}: a GPU whose memory needs attention (a row remap or page retirement
   * pending, spare rows exhausted, uncorrectable errors since the driver loaded) is a GPU fault on the process it
   * lists, or a note when it lists none (the GPU may not be the job's).
   */
  public static List<ContextFinding> fromGpuHealth(List<GpuHealth> gpus) {
    List<ContextFinding> out = new ArrayList<>();
    for (GpuHealth g : gpus) {
      String detail = "nvidia-smi -q, GPU " + g.busId() + ": " + String.join("; ", g.problems());
      if (g.pids().isEmpty()) {
        out.add(note(detail + " (no process listed on it)", g.source()));
        continue;
      }
      for (long pid : g.pids()) {
        out.add(ContextFinding.newBuilder().setKind(ContextFinding.Kind.GPU_FAULT).setRank(-1).setDevice(-1)
            .setGpuBusId(g.busId()).setPid(pid).setDetail(detail).setSource(g.source()).build());
      }
    }
    return out;
  }

  /**
   * What torch.distributed raised outside the watchdog's lines. gloo's "connection closed by peer" is a dead peer,
   * as NCCL's socket errors are; an exception raised from a collective, or a gloo timeout, says the job failed in
   * communication without saying why.
   */
  public static List<ContextFinding> fromCollectiveErrors(List<CollectiveError> errors) {
    List<ContextFinding> out = new ArrayList<>();
    for (CollectiveError e : errors) {
      ContextFinding.Builder f = ContextFinding.newBuilder().setRank(e.rank()).setDevice(-1).setSource(e.source());
      switch (e.kind()) {
        case PEER_CLOSED -> f.setKind(ContextFinding.Kind.DEAD_PEER).setPeer(e.peer())
            .setDetail("gloo: connection closed by the peer at " + e.peer() + ": \"" + e.message() + "\"");
        case WAITING -> f.setKind(ContextFinding.Kind.NOTE).setDetail((e.rank() >= 0 ? "rank " + e.rank() + ": " : "a "
            + "rank's ") + "stack is inside torch.distributed's " + e.call() + ", waiting for its peers: \""
            + e.message() + "\"");
        case CUDA_FAILED -> f.setKind(ContextFinding.Kind.GPU_FAULT).setDetail("a CUDA failure naming no rank: \""
            + e.message() + "\"");
        case TIMED_OUT -> f.setKind(ContextFinding.Kind.COLLECTIVE_FAILED).setDetail("a gloo collective timed out: \""
            + e.message() + "\"");
        case RAISED -> f.setKind(ContextFinding.Kind.COLLECTIVE_FAILED).setDetail((e.rank() >= 0 ? "rank " + e.rank() + ": " : "")
            + (e.call().isEmpty() ? "torch.distributed raised" : e.call() + " raised") + ": \"" + e.message()
            + "\"");
      }
      out.add(f.build());
    }
    return out;
  }

  /**
   * Ranks Horovod's stall inspector lists as missing from ops their peers submitted: behind their peers in issuing
   * collectives, as RAS's launch counts show for NCCL.
   */
  public static List<ContextFinding> fromHorovodStalls(List<StallInspectorReader.MissingRank> missing) {
    List<ContextFinding> out = new ArrayList<>();
    for (StallInspectorReader.MissingRank m : missing) {
      out.add(ContextFinding.newBuilder().setKind(ContextFinding.Kind.LAUNCH_LAG).setRank(m.rank()).setDevice(-1)
          .setDetail("Horovod's stall inspector: rank " + m.rank() + " never submitted an op its peers did: \""
              + m.text() + "\"").setSource(m.source()).build());
    }
    return out;
  }

  /**
   * PyTorch's desync report: ranks that finished a collective and never joined the next, or never joined any, did
   * not issue what their peers wait in (launch lag, the CPU side); ranks that joined one and did not finish it are
   * quoted.
   */
  public static List<ContextFinding> fromDesync(List<DesyncReportReader.Lagging> lagging) {
    List<ContextFinding> out = new ArrayList<>();
    for (DesyncReportReader.Lagging l : lagging) {
      boolean behind = l.kind() != DesyncReportReader.Kind.STARTED_NOT_FINISHED;
      for (int rank : l.ranks()) {
        out.add(ContextFinding.newBuilder().setKind(behind ? ContextFinding.Kind.LAUNCH_LAG
            : ContextFinding.Kind.NOTE).setRank(rank).setDevice(-1).setDetail("PyTorch's desync report: \""
            + l.text() + "\"").setSource(l.source()).build());
      }
    }
    return out;
  }

  /** Training steps that kept advancing: progress seen. */
  public static List<ContextFinding> fromSteps(java.util.Optional<StepProgress> steps) {
    return steps.map(p -> List.of(ContextFinding.newBuilder().setKind(ContextFinding.Kind.PROGRESS).setRank(-1)
        .setDevice(-1).setDetail("training steps advanced from " + p.first() + " to " + p.last() + " (" + p.lines()
            + " lines)").setSource(p.lastSource()).build())).orElse(List.of());
  }

  /**
   * What nccl-tests runs say: a run that went through every size with every value right is collectives completing
   * (progress); one that stopped part-way, or found wrong values, is quoted for what it shows.
   */
  public static List<ContextFinding> fromNcclTests(List<NcclTestsRun> runs) {
    List<ContextFinding> out = new ArrayList<>();
    for (NcclTestsRun r : runs) {
      String where = (r.devices() > 0 ? " on " + r.devices() + " rank" + (r.devices() == 1 ? "" : "s") : "")
          + (r.hosts().isEmpty() ? "" : " (" + String.join(", ", r.hosts()) + ")");
      ContextFinding.Builder f = ContextFinding.newBuilder().setRank(-1).setDevice(-1)
          .setHost(r.hosts().size() == 1 ? r.hosts().get(0) : "").setSource(r.source());
      if (r.completedCleanly()) {
        f.setKind(ContextFinding.Kind.PROGRESS).setDetail(String.format(java.util.Locale.ROOT,
            "nccl-tests ran all %d sizes%s to the end, every value right (average bus bandwidth %.1f GB/s)",
            r.sizes(), where, r.avgBusBandwidth()));
      } else if (r.wrong() == 0 && !r.finished() && r.sizes() >= 2) {
        // Sizes measured with every value right are collectives that completed: progress up to the last row, of a
        // run whose closing lines this log does not hold.
        f.setKind(ContextFinding.Kind.PROGRESS).setDetail("nccl-tests completed " + r.sizes() + " sizes" + where
            + " up to " + r.lastSize() + " bytes, every value right (the log ends before the run's closing lines)");
      } else if (r.wrong() > 0 || r.finished() && !r.outOfBoundsOk()) {
        f.setKind(ContextFinding.Kind.NOTE).setDetail("nccl-tests" + where + " found wrong values in "
            + Math.max(r.wrong(), 1) + " result" + (r.wrong() == 1 ? "" : "s") + ": data corrupted on the way");
      } else {
        f.setKind(ContextFinding.Kind.NOTE).setDetail("nccl-tests" + where + " stopped "
            + (r.sizes() == 0 ? "before its first result" : "after " + r.sizes() + " sizes (last " + r.lastSize()
            + " bytes)") + ": the next size never finished in this log");
      }
      out.add(f.build());
    }
    return out;
  }

  /**
   * The findings of NCCL RAS reports. Ranks behind in launched collectives become {@code LAUNCH_LAG}, one per
   * rank RAS names, or one for the group when it names none (RAS lists only small groups); a rank number is the
   * rank in the communicator, kept as the global rank only when the communicator spans the job. Processes RAS
   * considers dead are {@code PROCESS_DIED}; a report with nothing wrong is {@code RAS_CONSISTENT}; missing data
   * and other errors are notes.
   */
  public static List<ContextFinding> fromRas(List<RasReport> reports) {
    List<ContextFinding> out = new ArrayList<>();
    for (RasReport r : reports) {
      for (RasReport.CountMismatch m : r.mismatches()) {
        String detail = m.summary() + ": \"" + m.communicator() + " (" + m.commHash() + ") MISMATCH: Communicator "
            + "ranks have different " + m.operation() + " operation counts\"";
        boolean wholeJob = r.jobRanks() > 0 && r.communicators().stream().anyMatch(c -> c.group()
            == group(m.communicator()) && c.ranksPerComm() == r.jobRanks());
        List<RasReport.RasRank> named = new ArrayList<>();
        boolean allNamed = true;
        for (RasReport.LaunchCount c : m.behind()) {
          named.addAll(c.listed());
          allNamed &= c.listed().size() == c.ranks();
        }
        if (!allNamed || named.isEmpty()) {
          out.add(ContextFinding.newBuilder().setKind(ContextFinding.Kind.LAUNCH_LAG).setRank(-1).setDevice(-1)
              .setDetail(detail).setSource(m.source()).build());
          continue;
        }
        for (RasReport.RasRank rank : named) {
          out.add(ContextFinding.newBuilder().setKind(ContextFinding.Kind.LAUNCH_LAG).setHost(rank.node())
              .setRank(wholeJob ? rank.rank() : -1).setDevice(leadingInt(rank.gpu())).setPid(Math.max(rank.pid(), 0))
              .setDetail(detail).setSource(m.source()).build());
        }
      }
      for (RasReport.RasProcess p : r.dead()) {
        out.add(ContextFinding.newBuilder().setKind(ContextFinding.Kind.PROCESS_DIED).setHost(p.node()).setRank(-1)
            .setDevice(leadingInt(p.gpus())).setPid(p.pid()).setDetail("NCCL RAS considers process " + p.pid()
                + " on " + p.node() + " (GPU " + p.gpus() + ") dead: unreachable over RAS's own network")
            .setSource(r.source()).build());
      }
      for (RasReport.RasProcess p : r.missing()) {
        out.add(note("NCCL RAS got no data from process " + p.pid() + " on " + p.node() + " (GPU " + p.gpus()
            + "): unresponsive or gone", r.source()));
      }
      for (String problem : r.otherProblems()) {
        out.add(note("NCCL RAS reports " + problem, r.source()));
      }
      if (r.consistent()) {
        int comms = r.communicators().stream().mapToInt(RasReport.CommunicatorRow::comms).sum();
        out.add(ContextFinding.newBuilder().setKind(ContextFinding.Kind.RAS_CONSISTENT).setRank(-1).setDevice(-1)
            .setDetail("NCCL RAS: " + comms + " communicator" + (comms == 1 ? "" : "s") + " over " + r.ranks()
                + " ranks, all RUNNING with no error or mismatch: every process answered and every rank had "
                + "launched as many collectives as its peers").setSource(r.source()).build());
      }
    }
    return out;
  }

  /** The node contexts of findings, one per host they name (the empty host for those that name none). */
  public static List<NodeContext> nodes(String jobId, List<ContextFinding> findings) {
    Map<String, NodeContext.Builder> byHost = new TreeMap<>();
    for (ContextFinding f : findings) {
      byHost.computeIfAbsent(f.getHost(), h -> NodeContext.newBuilder().setJobId(jobId).setHostname(h))
          .addFindings(f);
    }
    return byHost.values().stream().map(NodeContext.Builder::build).toList();
  }

  private static int group(String communicator) {
    int dash = communicator.indexOf('-');
    try {
      return Integer.parseInt(communicator.substring(1, dash));
    } catch (RuntimeException e) {
      return -1;
    }
  }

  /** "4" or "4 (5)" → 4; "0-7" → 0; -1 when it does not start with a number. */
  private static int leadingInt(String s) {
    int end = 0;
    while (end < s.length() && end < 6 && Character.isDigit(s.charAt(end))) {
      end++;
    }
    return end == 0 ? -1 : Integer.parseInt(s.substring(0, end));
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
