package dev.frdiag.daemon.fleet;

import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import java.time.Instant;

/** Stored reports as the daemon writes them, with only the fields fleet memory reads filled in. */
public final class FleetReports {
  private FleetReports() {}

  /** A GPU stall blaming {@code host} and its CUDA device {@code device}. */
  public static Report gpuStall(String id, String job, Instant at, String host, int device) {
    return ReportJson.read("""
        {"schema": "frdiag.report/v1", "report_id": "%s", "job": "%s", "verdict": "HANG", "symptom": "GPU_STALL",
         "headline": "h", "culprit_ranks": [5], "culprit_hosts": ["%s"], "confidence": 0.85, "created_at": "%s",
         "trigger": "stall", "recommendation": "r",
         "culprits": [{"rank": 5, "host": "%s", "pid": 1, "cuda_device": %d, "last_op": "", "stack": []}]}
        """.formatted(id, job, host, at, host, device));
  }

  /** A fabric hang whose node findings put a link fault, naming {@code peer}, on {@code nic} port 1. */
  public static Report linkDown(String id, String job, Instant at, String host, String nic, String peer) {
    return ReportJson.read("""
        {"schema": "frdiag.report/v1", "report_id": "%s", "job": "%s", "verdict": "HANG", "symptom": "FABRIC",
         "headline": "h", "culprit_ranks": [], "culprit_hosts": ["%s"], "confidence": 0.8, "created_at": "%s",
         "trigger": "stall", "recommendation": "r",
         "fabric": {"hosts": [{"name": "%s", "culprit": true, "gpus": [], "marks": [], "nics": [
           {"name": "%s", "marks": [], "ports": [{"number": 1, "marks": [{"kind": "link_fault",
            "detail": "link went down", "source": "infiniband/%s/ports/1/link_downed", "peer": "%s"}]}]},
           {"name": "mlx5_9", "marks": [], "ports": [{"number": 1, "marks": [{"kind": "quiet_counters",
            "detail": "quiet", "source": "s", "peer": ""}]}]}]}], "other_hosts": 0}}
        """.formatted(id, job, host, at, host, nic, nic, peer));
  }

  /** A program mismatch whose culprit runs on {@code host}. */
  public static Report mismatch(String id, String job, Instant at, String host) {
    return ReportJson.read("""
        {"schema": "frdiag.report/v1", "report_id": "%s", "job": "%s", "verdict": "HANG", "symptom": "MISMATCH",
         "headline": "h", "culprit_ranks": [1], "culprit_hosts": ["%s"], "confidence": 0.9, "created_at": "%s",
         "trigger": "stall", "recommendation": "r"}
        """.formatted(id, job, host, at));
  }
}
