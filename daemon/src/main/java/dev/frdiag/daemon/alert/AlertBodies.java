package dev.frdiag.daemon.alert;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.frdiag.analysis.Ranks;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.UntrustedText;

/** What each kind of target is sent for one report; pure functions. */
final class AlertBodies {
  private static final ObjectMapper JSON = new ObjectMapper();

  private AlertBodies() {}

  static String of(AlertTarget.Kind kind, Report r) {
    return switch (kind) {
      case WEBHOOK -> ReportJson.write(r);
      case ALERTMANAGER -> alertmanager(r);
      case SLACK -> slack(r);
    };
  }

  /** One Alertmanager alert: labels to route and group by, annotations to read. */
  private static String alertmanager(Report r) {
    ArrayNode alerts = JSON.createArrayNode();
    ObjectNode alert = alerts.addObject();
    ObjectNode labels = alert.putObject("labels");
    // A slowed job is another alert than a hung one: routed and silenced on its own.
    labels.put("alertname", r.verdict().name().equals("SLOW") ? "FrdiagStraggler" : "FrdiagHang");
    labels.put("job_id", r.job());
    labels.put("verdict", r.verdict().name());
    labels.put("symptom", r.symptom().name());
    labels.put("severity", r.verdict().name().equals("HANG") ? "critical" : "warning");
    if (!r.culpritRanks().isEmpty()) {
      labels.put("culprit_ranks", Ranks.compact(r.culpritRanks()));
    }
    if (!r.culpritHosts().isEmpty()) {
      labels.put("culprit_hosts", String.join(",", r.culpritHosts()));
    }
    ObjectNode notes = alert.putObject("annotations");
    notes.put("summary", r.headline());
    notes.put("report_id", r.reportId());
    notes.put("recommendation", r.recommendation());
    if (!r.exclude().isEmpty()) {
      notes.put("exclude", String.join(",", r.exclude()));
    }
    alert.put("startsAt", r.createdAt().toString());
    return alerts.toString();
  }

  /** Slack's incoming webhook: a text message (Slack's own markup, rank text made safe). */
  private static String slack(Report r) {
    StringBuilder text = new StringBuilder();
    text.append("*frdiag ").append(r.verdict()).append(" · ").append(r.symptom()).append("* job `")
        .append(UntrustedText.line(r.job())).append("` (").append(r.reportId()).append(")\n")
        .append(UntrustedText.line(r.headline()));
    if (!r.culpritRanks().isEmpty()) {
      text.append("\nculprit ranks ").append(Ranks.compact(r.culpritRanks()));
    }
    if (!r.exclude().isEmpty()) {
      text.append("\nexclude on restart: `srun --exclude=").append(String.join(",", r.exclude())).append('`');
    }
    return JSON.createObjectNode().put("text", text.toString()).toString();
  }
}
