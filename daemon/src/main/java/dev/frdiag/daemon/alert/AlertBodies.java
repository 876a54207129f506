package dev.frdiag.daemon.alert;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.frdiag.analysis.Ranks;
import dev.frdiag.daemon.fleet.Standing;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.UntrustedText;
import java.util.Locale;

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

  /** What each kind of target is sent for a part that reached the fleet alert score. */
  static String of(AlertTarget.Kind kind, Standing s) {
    return switch (kind) {
      case WEBHOOK -> partJson(s);
      case ALERTMANAGER -> partAlertmanager(s);
      case SLACK -> partSlack(s);
    };
  }

  /** The part's standing as JSON, schema {@code frdiag.part-alert/v1}. */
  private static String partJson(Standing s) {
    ObjectNode o = JSON.createObjectNode();
    o.put("schema", "frdiag.part-alert/v1");
    o.put("kind", s.part().kind().name().toLowerCase(Locale.ROOT));
    o.put("host", s.part().host());
    o.put("part", s.part().name());
    o.put("score", s.score());
    o.put("jobs", s.jobs());
    o.put("incidents", s.incidents());
    o.put("as_culprit", s.asCulprit());
    ObjectNode symptoms = o.putObject("symptoms");
    s.symptoms().forEach((k, v) -> symptoms.put(k.name(), v));
    o.put("first", s.first().toString());
    o.put("last", s.last().toString());
    o.put("summary", s.part().display() + ": " + s.summary());
    if (!s.drain().isEmpty()) {
      o.put("drain", s.drain());
    }
    ArrayNode reports = o.putArray("reports");
    s.recent().forEach(i -> reports.add(i.reportId()));
    return o.toString();
  }

  /** One Alertmanager alert per part: labels to route by, the summary and the drain line to read. */
  private static String partAlertmanager(Standing s) {
    ArrayNode alerts = JSON.createArrayNode();
    ObjectNode alert = alerts.addObject();
    ObjectNode labels = alert.putObject("labels");
    labels.put("alertname", "FrdiagPart");
    labels.put("kind", s.part().kind().name().toLowerCase(Locale.ROOT));
    labels.put("host", s.part().host());
    if (!s.part().name().isEmpty()) {
      labels.put("part", s.part().name());
    }
    labels.put("severity", "warning");
    ObjectNode notes = alert.putObject("annotations");
    notes.put("summary", s.part().display() + ": " + s.summary());
    notes.put("reports", String.join(",", s.recent().stream().map(Standing.Incident::reportId).toList()));
    if (!s.drain().isEmpty()) {
      notes.put("drain", s.drain());
    }
    alert.put("startsAt", s.asOf().toString());
    return alerts.toString();
  }

  private static String partSlack(Standing s) {
    StringBuilder text = new StringBuilder("*frdiag part* `").append(UntrustedText.line(s.part().display()))
        .append("`: ").append(UntrustedText.line(s.summary()));
    if (!s.drain().isEmpty()) {
      text.append("\ndrain: `").append(UntrustedText.line(s.drain())).append('`');
    }
    return JSON.createObjectNode().put("text", text.toString()).toString();
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
    if (r.recoveredAt() != null) {
      // The same labels as the alert the hang raised: Alertmanager resolves that alert at endsAt.
      alert.put("endsAt", r.recoveredAt().toString());
    }
    return alerts.toString();
  }

  /** Slack's incoming webhook: a text message (Slack's own markup, rank text made safe). */
  private static String slack(Report r) {
    StringBuilder text = new StringBuilder();
    text.append(r.recoveredAt() == null ? "" : "*resolved* ").append("*frdiag ").append(r.verdict()).append(" · ")
        .append(r.symptom()).append("* job `")
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
