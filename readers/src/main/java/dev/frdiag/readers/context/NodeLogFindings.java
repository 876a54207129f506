package dev.frdiag.readers.context;

import static dev.frdiag.readers.context.ContextFindings.note;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.exit.ProcessExit;
import dev.frdiag.readers.gpu.GpuHealth;
import dev.frdiag.readers.horovod.StallInspectorReader;
import dev.frdiag.readers.kernel.XidKind;
import dev.frdiag.readers.kernel.XidLine;
import dev.frdiag.readers.nccltests.NcclTestsRun;
import dev.frdiag.readers.progress.StepProgress;
import dev.frdiag.readers.pytorch.CollectiveError;
import dev.frdiag.readers.pytorch.DesyncReportReader;
import dev.frdiag.readers.ras.RasReport;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reduces what {@link NodeLogs} found in the lines of a node's logs that are not NCCL's (the driver's Xid lines,
 * processes that died, NCCL RAS reports, {@code nvidia-smi -q}, nccl-tests runs, torch.distributed's exceptions,
 * training steps, Horovod's stall inspector, PyTorch's desync report) to the wire's {@link ContextFinding}s.
 */
final class NodeLogFindings {
  private NodeLogFindings() {}

  /**
   * The findings of a kernel log's Xid lines, one per GPU, fault and process. A cleanup (Xid 45) counts as the
   * fault it names. A device or application fault counts only on a GPU the log shows a process using (a pid on
   * any of that GPU's lines): a fault on a GPU no process used may not be the job's, so it is only a note.
   */
  static List<ContextFinding> fromXids(List<XidLine> lines) {
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
  static List<ContextFinding> fromExits(List<ProcessExit> exits) {
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
  static List<ContextFinding> fromGpuHealth(List<GpuHealth> gpus) {
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
  static List<ContextFinding> fromCollectiveErrors(List<CollectiveError> errors) {
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
  static List<ContextFinding> fromHorovodStalls(List<StallInspectorReader.MissingRank> missing) {
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
  static List<ContextFinding> fromDesync(List<DesyncReportReader.Lagging> lagging) {
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
  static List<ContextFinding> fromSteps(java.util.Optional<StepProgress> steps) {
    return steps.map(p -> List.of(ContextFinding.newBuilder().setKind(ContextFinding.Kind.PROGRESS).setRank(-1)
        .setDevice(-1).setDetail("training steps advanced from " + p.first() + " to " + p.last() + " (" + p.lines()
            + " lines)").setSource(p.lastSource()).build())).orElse(List.of());
  }

  /**
   * What nccl-tests runs say: a run that went through every size with every value right is collectives completing
   * (progress); one that stopped part-way, or found wrong values, is quoted for what it shows.
   */
  static List<ContextFinding> fromNcclTests(List<NcclTestsRun> runs) {
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
  static List<ContextFinding> fromRas(List<RasReport> reports) {
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
  static List<NodeContext> nodes(String jobId, List<ContextFinding> findings) {
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
}
