package dev.frdiag.daemon.store;

import dev.frdiag.analysis.Culprit;
import dev.frdiag.analysis.FabricMap;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.report.Report;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What the store keeps in memory of one stored report: what lists, lookups, retention and fleet memory read. The
 * whole report stays on disk and is read when asked for ({@link ReportStore#get}).
 *
 * @param culpritGpus the culprits' GPUs, where the report names host and device
 * @param fabric the failing parts of the report's fabric picture only (a finding's detail and source left out);
 *     null when the report has none
 * @param recoveredAt when the hang it reports ended by itself; null when it did not (or not yet)
 */
public record StoredReport(String reportId, String job, Instant createdAt, Report.Trigger trigger, Verdict verdict,
    Symptom symptom, String headline, List<Integer> culpritRanks, List<String> culpritHosts, List<Gpu> culpritGpus,
    FabricMap fabric, Instant recoveredAt) {

  /** A culprit's GPU: the host it sits on and its CUDA device ordinal. */
  public record Gpu(String host, int device) {
    public Gpu {
      host = Objects.requireNonNull(host, "host").intern();
    }
  }

  public StoredReport {
    Objects.requireNonNull(reportId, "report_id");
    Objects.requireNonNull(job, "job");
    Objects.requireNonNull(createdAt, "created_at");
    Objects.requireNonNull(trigger, "trigger");
    Objects.requireNonNull(verdict, "verdict");
    Objects.requireNonNull(symptom, "symptom");
    Objects.requireNonNull(headline, "headline");
    // A job's name and a host's stand in many summaries: one copy each, whoever read them.
    job = job.intern();
    culpritRanks = List.copyOf(culpritRanks);
    culpritHosts = culpritHosts.stream().map(String::intern).toList();
    culpritGpus = List.copyOf(culpritGpus);
  }

  /** The summary of {@code report}. */
  public static StoredReport of(Report report) {
    List<Gpu> gpus = new ArrayList<>();
    for (Culprit c : report.culprits()) {
      if (c.host() != null && c.cudaDevice() >= 0) {
        gpus.add(new Gpu(c.host(), c.cudaDevice()));
      }
    }
    return new StoredReport(report.reportId(), report.job(), report.createdAt(), report.trigger(), report.verdict(),
        report.symptom(), report.headline(), report.culpritRanks(), report.culpritHosts(), gpus,
        failing(report.fabric()), report.recoveredAt());
  }

  /** The parts of {@code fabric} a fault finding names, with only those findings; null when none. */
  private static FabricMap failing(FabricMap fabric) {
    if (fabric == null) {
      return null;
    }
    List<FabricMap.Host> hosts = new ArrayList<>();
    for (FabricMap.Host h : fabric.hosts()) {
      if (!h.failing()) {
        continue;
      }
      List<FabricMap.Gpu> gpus = new ArrayList<>();
      for (FabricMap.Gpu g : h.gpus()) {
        if (FabricMap.failing(g.marks())) {
          gpus.add(new FabricMap.Gpu(g.rank(), g.device(), "", "", g.culprit(), failing(g.marks())));
        }
      }
      List<FabricMap.Nic> nics = new ArrayList<>();
      for (FabricMap.Nic n : h.nics()) {
        List<FabricMap.Port> ports = n.ports().stream().filter(p -> FabricMap.failing(p.marks()))
            .map(p -> new FabricMap.Port(p.number(), failing(p.marks()))).toList();
        if (!ports.isEmpty() || FabricMap.failing(n.marks())) {
          nics.add(new FabricMap.Nic(n.name(), ports, failing(n.marks())));
        }
      }
      hosts.add(new FabricMap.Host(h.name(), h.culprit(), gpus, nics, failing(h.marks())));
    }
    return hosts.isEmpty() ? null : new FabricMap(hosts, 0);
  }

  /** The fault findings of {@code marks}, by kind and peer: what fleet memory reads of them. */
  private static List<FabricMap.Mark> failing(List<FabricMap.Mark> marks) {
    return marks.stream().filter(FabricMap.Mark::failing).map(m -> new FabricMap.Mark(m.kind(), "", "", m.peer()))
        .distinct().toList();
  }
}
