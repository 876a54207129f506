package dev.frdiag.daemon.web;

import dev.frdiag.daemon.fleet.FleetSettings;
import dev.frdiag.daemon.fleet.Standing;
import dev.frdiag.report.ReportHtml;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;

/** The fleet page ({@code /parts}): the parts that keep showing up in hangs, highest score first; pure. */
final class PartsPage {
  /** Rows drawn; the rest are counted below the table. */
  static final int ROWS = 500;

  private PartsPage() {}

  static String of(List<Standing> parts, FleetSettings settings) {
    StringBuilder b = new StringBuilder("<section><h1>Parts that keep showing up in hangs</h1><p>Each distinct job "
        + "whose hang blamed or marked a part adds up to 1 to its score, halved every ")
        .append(settings.halfLife().toDays()).append(" days; at ")
        .append(String.format(Locale.ROOT, "%.1f", settings.alertScore()))
        .append(" the daemon alerts. Only the jobs you may read count here.</p>");
    if (parts.isEmpty()) {
      return ReportHtml.document("frdiag parts", List.of(new ReportHtml.Link("all jobs", "/")),
          b.append("<p id=\"no-parts\">No hang has blamed or marked any part yet.</p></section>").toString());
    }
    b.append("<table class=\"list\" id=\"parts\"><tr><th>#</th><th>part</th><th>kind</th><th>score</th>"
        + "<th>jobs</th><th>hangs</th><th>symptoms</th><th>last</th><th>reports</th><th>drain</th></tr>");
    int rank = 0;
    for (Standing s : parts) {
      if (++rank > ROWS) {
        break;
      }
      b.append("<tr class=\"part").append(s.alerting() ? " alerting" : "").append("\"><td>").append(rank)
          .append("</td><td>").append(h(s.part().display())).append(s.alerting() ? " <b>alert</b>" : "")
          .append("</td><td>").append(s.part().kind().name().toLowerCase(Locale.ROOT)).append("</td><td>")
          .append(String.format(Locale.ROOT, "%.2f", s.score())).append("</td><td>").append(s.jobs())
          .append("</td><td>").append(s.incidents());
      if (s.asCulprit() > 0 && s.asCulprit() < s.incidents()) {
        b.append(" (").append(s.asCulprit()).append(" culprit)");
      } else {
        b.append(s.asCulprit() == 0 ? " marked" : " culprit");
      }
      b.append("</td><td>");
      s.symptomsMostFirst().forEach(e -> b.append(e.getKey()).append(" \u00d7").append(e.getValue()).append(' '));
      b.append("</td><td>").append(h(s.last().truncatedTo(ChronoUnit.SECONDS).toString())).append("</td><td>");
      for (Standing.Incident i : s.recent()) {
        b.append("<a href=\"/reports/").append(encode(i.reportId())).append("\" title=\"")
            .append(h(i.job() + " " + i.symptom() + (i.culprit() ? " culprit" : " marked"))).append("\">")
            .append(h(i.reportId())).append("</a> ");
      }
      b.append("</td><td>").append(s.drain().isEmpty() ? "" : "<code>" + h(s.drain()) + "</code>")
          .append("</td></tr>");
    }
    b.append("</table>");
    if (parts.size() > ROWS) {
      b.append("<p>").append(parts.size() - ROWS).append(" more parts score less.</p>");
    }
    return ReportHtml.document("frdiag parts", List.of(new ReportHtml.Link("all jobs", "/")),
        b.append("</section>").toString());
  }

  private static String encode(String segment) {
    return WebServer.encode(segment);
  }

  private static String h(String text) {
    return WebServer.h(text);
  }
}
