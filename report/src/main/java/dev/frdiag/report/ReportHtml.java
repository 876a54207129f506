package dev.frdiag.report;

import dev.frdiag.analysis.Culprit;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.GroupProgress;
import dev.frdiag.analysis.Ranks;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Renders a {@link Report} as one self-contained HTML page (inline CSS, script and SVG, nothing fetched), the same
 * whether the daemon serves it or {@code fr-diagnose} writes it to a file for a ticket: the verdict first, then a
 * grid of ranks × seqs per stuck group, who waits for whom ({@link WaitPicture}), the evidence, the culprits' stacks
 * and the timeline; for a network verdict, the hosts, GPUs, NICs and ports involved ({@link FabricPicture}).
 *
 * <p>The grid stays short however many ranks there are: members with the same cells on consecutive hosts share one
 * row, with a count, and a button opens it into its hosts. The culprits' rows are never merged.
 */
public final class ReportHtml {
  private ReportHtml() {}

  /** A link shown above the report, e.g. back to the job's reports. */
  public record Link(String label, String href) {}

  /** The report as a page with no links around it: what {@code fr-diagnose --html} writes. */
  public static String page(Report r) {
    return page(r, List.of());
  }

  /** The report as a page, with {@code nav} above it. */
  public static String page(Report r, List<Link> nav) {
    StringBuilder b = new StringBuilder(16_384);
    // A hang that ended by itself is a slowdown: drawn as one, not as the red of a job that is still stuck.
    b.append("<header class=\"verdict ").append(r.recoveredAt() != null ? "recovered"
        : r.verdict().name().toLowerCase(Locale.ROOT)).append("\">")
        .append("<h1 id=\"headline\">").append(h(r.headline())).append("</h1>")
        .append("<p class=\"title\"><span class=\"badge\">").append(r.verdict()).append("</span> <span class=\"badge\">")
        .append(r.symptom()).append("</span> ").append(r.recoveredAt() == null ? "" : "<span class=\"badge\">RECOVERED"
            + "</span> ").append("confidence ").append(String.format(Locale.ROOT, "%.2f", r.confidence()))
        .append("</p></header>");
    summary(b, r);
    FabricPicture.draw(b, r.fabric());
    LatenessPicture.draw(b, r.lateness());
    for (int i = 0; i < r.groupProgress().size(); i++) {
      grid(b, r.groupProgress().get(i), i);
    }
    WaitPicture.draw(b, r.stuckCollectives(), r.culpritRanks());
    evidence(b, r);
    culprits(b, r.culprits());
    rankStates(b, r.rankStates());
    timeline(b, r.timeline());
    b.append("<section><h2>Recommended action</h2><p id=\"recommendation\">").append(h(r.recommendation()))
        .append("</p></section>");
    String title = r.verdict() + " " + r.symptom() + " · " + (r.reportId().isEmpty() ? r.job() : r.reportId());
    return document(title, nav, b.toString());
  }

  /**
   * A page around {@code body}, which must already be safe HTML, with the report pages' style and script: what the
   * daemon's lists of jobs and reports are drawn in too.
   */
  public static String document(String title, List<Link> nav, String body) {
    StringBuilder b = new StringBuilder(body.length() + 4096);
    b.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
        .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        .append("<title>").append(h(title)).append("</title><style>").append(STYLE).append("</style></head><body>");
    if (!nav.isEmpty()) {
      b.append("<nav>");
      for (Link l : nav) {
        b.append("<a href=\"").append(h(l.href())).append("\">").append(h(l.label())).append("</a> ");
      }
      b.append("</nav>");
    }
    b.append("<main>").append(body).append("</main><script>").append(SCRIPT).append("</script></body></html>\n");
    return b.toString();
  }

  private static void summary(StringBuilder b, Report r) {
    b.append("<section><dl class=\"summary\">");
    dt(b, "job", h(r.job()));
    if (!r.reportId().isEmpty()) {
      dt(b, "report", h(r.reportId()));
    }
    dt(b, "created", h(DateTimeFormatter.ISO_INSTANT.format(r.createdAt().truncatedTo(ChronoUnit.SECONDS)))
        + " (trigger: " + h(r.trigger().wire()) + ")");
    if (r.recoveredAt() != null) {
      dt(b, "recovered", "<span id=\"recovered\">" + h(DateTimeFormatter.ISO_INSTANT.format(
          r.recoveredAt().truncatedTo(ChronoUnit.SECONDS))) + " (the job moved again by itself)</span>");
    }
    if (r.collective() != null) {
      dt(b, "collective", h(r.collective().label() + (r.collective().processGroupDesc().isEmpty() ? ""
          : " (" + r.collective().processGroupDesc() + ")")
          + (r.collective().commsId().isEmpty() ? "" : "  comms_id " + r.collective().commsId())));
    }
    dt(b, "culprit ranks", "<span id=\"culprit-ranks\">"
        + h(r.culpritRanks().isEmpty() ? "none" : Ranks.compact(r.culpritRanks())) + "</span>");
    if (!r.culpritHosts().isEmpty()) {
      dt(b, "culprit hosts", h(String.join(", ", r.culpritHosts())));
    }
    if (!r.exclude().isEmpty()) {
      dt(b, "exclude", "<code>srun --exclude=" + h(String.join(",", r.exclude())) + "</code>");
    }
    if (!r.scheduler().isEmpty()) {
      StringBuilder names = new StringBuilder();
      r.scheduler().forEach((k, v) -> names.append(names.length() == 0 ? "" : ", ").append(k).append('=').append(v));
      dt(b, "scheduler", h(names.toString()));
    }
    b.append("</dl></section>");
  }

  private static void dt(StringBuilder b, String name, String safeValue) {
    b.append("<dt>").append(name).append("</dt><dd>").append(safeValue).append("</dd>");
  }

  /** One row of the drawn grid: consecutive rows of the report that look the same. */
  private record DrawnRow(List<GroupProgress.Row> parts) {
    GroupProgress.Row first() {
      return parts.get(0);
    }

    boolean absorbs(GroupProgress.Row next) {
      GroupProgress.Row f = first();
      return !f.culprit() && !next.culprit() && f.lost() == next.lost() && f.cells().equals(next.cells());
    }
  }

  static List<List<GroupProgress.Row>> collapse(List<GroupProgress.Row> rows) {
    List<DrawnRow> drawn = new ArrayList<>();
    for (GroupProgress.Row row : rows) {
      DrawnRow last = drawn.isEmpty() ? null : drawn.get(drawn.size() - 1);
      if (last != null && last.absorbs(row)) {
        last.parts().add(row);
      } else {
        List<GroupProgress.Row> parts = new ArrayList<>();
        parts.add(row);
        drawn.add(new DrawnRow(parts));
      }
    }
    return drawn.stream().map(DrawnRow::parts).toList();
  }

  private static void grid(StringBuilder b, GroupProgress g, int index) {
    String label = g.collective().processGroup() + (g.collective().processGroupDesc().isEmpty() ? ""
        : " (" + g.collective().processGroupDesc() + ")");
    int members = g.rows().stream().mapToInt(r -> r.ranks().size()).sum();
    b.append("<section class=\"grid\" id=\"grid-").append(index).append("\" data-members=\"").append(members)
        .append("\"><h2>")
        .append(g.rootCause() ? "Root cause: " : "Waiting: ").append(h(g.collective().label()))
        .append("</h2><p class=\"sub\">process group ").append(h(label)).append(", ")
        .append(members).append(" members")
        .append(g.collective().isP2p() ? ", p2p seqs" : "").append("</p>");
    b.append("<table class=\"ranks\"><thead><tr><th class=\"who\">ranks</th><th class=\"n\">#</th>");
    for (int c = 0; c < g.columns(); c++) {
      long seq = g.firstSeq() + c;
      b.append("<th class=\"seq").append(seq == g.collective().seq() ? " stuck" : "").append("\">")
          .append(seq).append("</th>");
    }
    b.append("</tr></thead><tbody>");
    List<List<GroupProgress.Row>> drawn = collapse(g.rows());
    for (int i = 0; i < drawn.size(); i++) {
      List<GroupProgress.Row> parts = drawn.get(i);
      String id = "g" + index + "r" + i;
      GroupProgress.Row first = parts.get(0);
      int ranks = parts.stream().mapToInt(p -> p.ranks().size()).sum();
      b.append("<tr class=\"row").append(first.culprit() ? " culprit" : "").append(first.lost() ? " lost" : "")
          .append("\" data-ranks=\"").append(ranks).append("\"").append(first.culprit() ? " data-culprit=\"true\"" : "")
          .append("><td class=\"who\">");
      if (parts.size() > 1) {
        b.append("<button class=\"expand\" type=\"button\" aria-expanded=\"false\" data-row=\"").append(id)
            .append("\" title=\"show each host\">▸</button> ").append(h(first.host())).append(" … ")
            .append(h(parts.get(parts.size() - 1).host())).append(" <span class=\"dim\">(")
            .append(parts.stream().map(GroupProgress.Row::host).distinct().count()).append(" hosts)</span>");
      } else {
        b.append(h(first.host())).append(" <span class=\"dim\">").append(h(Ranks.compact(first.ranks())))
            .append("</span>");
      }
      if (first.culprit()) {
        b.append(" <span class=\"badge culprit\">culprit</span>");
      }
      if (first.lost()) {
        b.append(" <span class=\"badge\">lost</span>");
      }
      b.append("</td><td class=\"n\">").append(ranks).append("</td>");
      cells(b, g, first);
      b.append("</tr>");
      if (parts.size() > 1) {
        for (GroupProgress.Row p : parts) {
          b.append("<tr class=\"part\" data-part-of=\"").append(id).append("\" hidden><td class=\"who\">")
              .append(h(p.host())).append(" <span class=\"dim\">").append(h(Ranks.compact(p.ranks())))
              .append("</span></td><td class=\"n\">").append(p.ranks().size()).append("</td>");
          cells(b, g, p);
          b.append("</tr>");
        }
      }
    }
    b.append("</tbody></table>");
    legend(b, g.startsRecorded());
    b.append("</section>");
  }

  private static void cells(StringBuilder b, GroupProgress g, GroupProgress.Row row) {
    for (int c = 0; c < row.cells().length(); c++) {
      GroupProgress.Cell cell = row.cell(c);
      long seq = g.firstSeq() + c;
      b.append("<td class=\"cell ").append(cssOf(cell)).append(seq == g.collective().seq() ? " stuck" : "")
          .append("\" title=\"seq ").append(seq).append(": ").append(words(cell, g.startsRecorded()))
          .append("\"></td>");
    }
  }

  private static void legend(StringBuilder b, boolean starts) {
    b.append("<p class=\"legend\">");
    for (GroupProgress.Cell c : GroupProgress.Cell.values()) {
      b.append("<span><i class=\"cell ").append(cssOf(c)).append("\"></i> ").append(words(c, starts))
          .append("</span>");
    }
    b.append("<span><i class=\"cell key stuck\"></i> the stuck seq</span></p>");
  }

  private static String cssOf(GroupProgress.Cell c) {
    return switch (c) {
      case COMPLETED -> "completed";
      case STARTED -> "started";
      case ISSUED -> "issued";
      case NOT_ISSUED -> "not-issued";
      case NO_EVIDENCE -> "unknown";
    };
  }

  private static String words(GroupProgress.Cell c, boolean starts) {
    return switch (c) {
      case COMPLETED -> "completed";
      case STARTED -> "started on the device, not completed";
      case ISSUED -> starts ? "issued, device never started it" : "issued, not completed (starts not recorded)";
      case NOT_ISSUED -> "never issued";
      case NO_EVIDENCE -> "no evidence";
    };
  }


  /** Each fact, opened to where its ranks stand in the pictured groups and what the culprits among them hold. */
  private static void evidence(StringBuilder b, Report r) {
    if (r.evidence().isEmpty()) {
      return;
    }
    b.append("<section><h2>Evidence</h2><div id=\"evidence\">");
    for (Evidence e : r.evidence()) {
      b.append("<details class=\"evidence\"><summary><span class=\"kind\">").append(h(e.kind().wire()))
          .append("</span> ").append(h(e.detail())).append("</summary><div class=\"raw\">");
      if (!e.ranks().isEmpty()) {
        b.append("<p>ranks ").append(h(Ranks.compact(e.ranks()))).append("</p>");
      }
      Set<Integer> ranks = new TreeSet<>(e.ranks());
      for (GroupProgress g : r.groupProgress()) {
        List<String> lines = new ArrayList<>();
        for (GroupProgress.Row row : g.rows()) {
          if (row.ranks().stream().anyMatch(ranks::contains)) {
            StringBuilder line = new StringBuilder();
            for (int c = 0; c < row.cells().length(); c++) {
              line.append(c == 0 ? "" : "  ").append(g.firstSeq() + c).append(':')
                  .append(words(row.cell(c), g.startsRecorded()));
            }
            lines.add(row.host() + " " + Ranks.compact(row.ranks().stream().filter(ranks::contains).toList())
                + "  " + line);
          }
        }
        if (!lines.isEmpty()) {
          b.append("<p class=\"sub\">in ").append(h(g.collective().processGroup())).append(":</p><pre>");
          lines.stream().limit(16).forEach(l -> b.append(h(l)).append('\n'));
          if (lines.size() > 16) {
            b.append("… ").append(lines.size() - 16).append(" more rows\n");
          }
          b.append("</pre>");
        }
      }
      for (Culprit c : r.culprits()) {
        if (!ranks.contains(c.rank())) {
          continue;
        }
        if (!c.records().isEmpty()) {
          b.append("<p class=\"sub\">rank ").append(c.rank()).append("'s own records:</p><pre class=\"records\">");
          c.records().forEach(line -> b.append(h(line)).append('\n'));
          b.append("</pre>");
        } else if (!c.lastOp().isEmpty()) {
          b.append("<p>rank ").append(c.rank()).append(" newest record: <code>").append(h(c.lastOp()))
              .append("</code></p>");
        }
      }
      String[] quoted = quotedLine(e.detail());
      if (quoted != null) {
        b.append("<p class=\"sub\">the line").append(quoted[1].isEmpty() ? "" : ", read from <code>" + h(quoted[1])
            + "</code>").append(":</p><pre class=\"line\">").append(h(quoted[0])).append("</pre>");
      }
      b.append("</div></details>");
    }
    b.append("</div></section>");
  }

  /**
   * The log line a node finding's evidence quotes and where it was read: {@code …: "the line" [file.log:31]} gives
   * {the line, file.log:31}; null when the detail quotes none.
   */
  static String[] quotedLine(String detail) {
    int open = detail.indexOf(": \"");
    if (open < 0) {
      return null;
    }
    String source = "";
    int end = detail.length();
    if (detail.endsWith("]")) {
      int bracket = detail.lastIndexOf(" [");
      if (bracket > open) {
        source = detail.substring(bracket + 2, detail.length() - 1);
        end = bracket;
      }
    }
    int close = detail.lastIndexOf('"', end - 1);
    return close > open + 3 ? new String[] {detail.substring(open + 3, close), source} : null;
  }

  private static void culprits(StringBuilder b, List<Culprit> culprits) {
    if (culprits.isEmpty()) {
      return;
    }
    b.append("<section><h2>Culprits</h2>");
    for (Culprit k : culprits) {
      b.append("<div class=\"culprit-detail\" data-rank=\"").append(k.rank()).append("\"><p><b>rank ")
          .append(k.rank()).append("</b> on ").append(h(k.host()))
          .append(k.pid() > 0 ? " · pid " + k.pid() : "").append(k.cudaDevice() >= 0 ? " · cuda:" + k.cudaDevice() : "")
          .append(k.lastOp().isEmpty() ? "" : " · newest record <code>" + h(k.lastOp()) + "</code>").append("</p>");
      CulpritStacks.html(b, k);
      if (!k.records().isEmpty()) {
        b.append("<details><summary>its records (").append(k.records().size())
            .append(")</summary><pre class=\"records\">");
        k.records().forEach(line -> b.append(h(line)).append('\n'));
        b.append("</pre></details>");
      }
      if (!k.stack().isEmpty()) {
        b.append("<pre class=\"stack\">");
        k.stack().forEach(frame -> b.append("at ").append(h(frame)).append('\n'));
        b.append("</pre>");
      }
      b.append("</div>");
    }
    b.append("</section>");
  }

  private static void rankStates(StringBuilder b, List<Diagnosis.RankGroup> groups) {
    if (groups.isEmpty()) {
      return;
    }
    b.append("<section><h2>Where every rank is</h2><ul>");
    for (Diagnosis.RankGroup g : groups) {
      b.append("<li>").append(h(g.label())).append(": ranks ").append(h(Ranks.compact(g.ranks()))).append("</li>");
    }
    b.append("</ul></section>");
  }

  private static void timeline(StringBuilder b, List<Report.TimelineEntry> timeline) {
    if (timeline.isEmpty()) {
      return;
    }
    b.append("<section><h2>Timeline</h2><table id=\"timeline\" class=\"timeline\">");
    Instant first = timeline.get(0).at();
    for (Report.TimelineEntry t : timeline) {
      String offset = String.format(Locale.ROOT, "+%.3f s", Duration.between(first, t.at()).toNanos() / 1e9);
      b.append("<tr><td class=\"dim\">").append(h(t.time())).append("</td><td class=\"n\">").append(offset)
          .append("</td><td>").append(h(t.event())).append("</td></tr>");
    }
    b.append("</table></section>");
  }

  private static String h(String text) {
    return UntrustedText.html(text);
  }

  private static final String STYLE = """
      body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
      main{max-width:1100px;margin:0 auto;padding:12px 20px 40px}
      nav{background:#263238;padding:8px 20px}nav a{color:#eceff1;margin-right:16px;text-decoration:none}
      header.verdict{border-left:6px solid #9e9e9e;padding:4px 14px;margin:12px 0;background:#fff}
      header.hang{border-color:#d32f2f}header.no_hang{border-color:#388e3c}
      header.slow,header.recovered{border-color:#f57c00}
      svg.lateness text{font:12px ui-monospace,monospace;fill:#1d1d1f}svg.lateness text.dim{fill:#666}
      svg.lateness .culprit text{fill:#b71c1c;font-weight:bold}svg.lateness rect.outline{fill:none;stroke:#d32f2f;stroke-width:2}
      table.list tr.culprit td{color:#b71c1c;font-weight:bold}h3{font-size:14px;margin:12px 0 4px}
      h1{font-size:20px;margin:6px 0}h2{font-size:16px;margin:18px 0 6px}
      .title{margin:2px 0 6px;color:#444}.badge{display:inline-block;background:#eceff1;border-radius:3px;padding:0 6px;font-size:12px}
      .badge.culprit{background:#d32f2f;color:#fff}
      section{background:#fff;padding:6px 14px 10px;margin:10px 0;border:1px solid #e0e0e0;border-radius:4px}
      dl.summary{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:6px 0}dt{color:#666}dd{margin:0}
      .sub,.dim{color:#666}.sub{margin:0 0 6px}
      table.ranks{border-collapse:separate;border-spacing:2px}
      table.ranks th{font-weight:normal;color:#666;font-size:12px}th.seq.stuck{color:#d32f2f;font-weight:bold}
      td.who{white-space:nowrap;padding-right:10px;font-family:ui-monospace,monospace;font-size:12px}
      td.n{text-align:right;color:#666;font-size:12px;padding-right:8px}
      .cell{display:inline-block;width:34px;height:18px;border-radius:2px;border:1px solid rgba(0,0,0,.12)}
      td.cell{display:table-cell}
      .completed{background:#66bb6a}.started{background:#42a5f5}.issued{background:#ffa726}
      .not-issued{background:#f5f5f5}.unknown{background:repeating-linear-gradient(45deg,#bdbdbd,#bdbdbd 3px,#e0e0e0 3px,#e0e0e0 6px)}
      td.cell.stuck{box-shadow:inset 0 0 0 2px #37474f}.key.stuck{box-shadow:inset 0 0 0 2px #37474f;background:#fff}
      tr.culprit td.cell{outline:3px solid #d32f2f;outline-offset:-3px}tr.culprit td.who{color:#b71c1c;font-weight:bold}
      tr.part td.who{padding-left:26px;color:#555}
      button.expand{border:none;background:#eceff1;border-radius:3px;cursor:pointer;padding:0 5px}
      .legend{font-size:12px;color:#444}.legend span{margin-right:14px;white-space:nowrap}.legend .cell{width:14px;height:12px;vertical-align:middle}
      svg.waits rect{fill:#fff;stroke:#78909c}svg.waits rect.red{fill:#ffebee;stroke:#d32f2f;stroke-width:2}
      svg.waits text{font:12px ui-monospace,monospace;fill:#1d1d1f}svg.waits text.dim{fill:#555;font-size:11px}
      svg.waits .culprit text{fill:#b71c1c;font-weight:bold}svg.waits path.link{fill:none;stroke:#555}
      svg.waits path.cycle{stroke:#d32f2f;stroke-width:1.5}
      svg.fabric rect{fill:#fff;stroke:#90a4ae}svg.fabric line{stroke:#90a4ae}svg.fabric line.dashed{stroke:#d32f2f;stroke-dasharray:4 3}
      svg.fabric .failing rect{fill:#ffcdd2;stroke:#d32f2f}svg.fabric .quiet rect{fill:#c8e6c9;stroke:#388e3c}
      svg.fabric .culprit rect{stroke:#d32f2f;stroke-width:3}svg.fabric text{font:12px ui-monospace,monospace;fill:#1d1d1f}
      svg.fabric text.dim{fill:#666}svg.fabric text.peer{fill:#b71c1c}
      .key.failing{background:#ffcdd2;border-color:#d32f2f}.key.quiet{background:#c8e6c9;border-color:#388e3c}.key.culprit{background:#fff;border:3px solid #d32f2f}
      details.evidence{margin:3px 0}details.evidence summary{cursor:pointer}
      .kind{font-family:ui-monospace,monospace;font-size:12px;background:#eceff1;padding:0 5px;border-radius:3px}
      .raw{margin:4px 0 8px 18px}pre{background:#f5f5f5;padding:6px 8px;overflow:auto;font-size:12px;margin:4px 0}
      table.list{border-collapse:collapse;width:100%}table.list th{text-align:left;color:#666;font-weight:normal}
      table.list td,table.list th{padding:3px 10px 3px 0;border-bottom:1px solid #eee;vertical-align:top}
      table.timeline td{padding:1px 8px 1px 0;vertical-align:top}code{font-size:12px}
      """;

  private static final String SCRIPT = """
      document.querySelectorAll('button.expand').forEach(function (b) {
        b.addEventListener('click', function () {
          var open = b.getAttribute('aria-expanded') !== 'true';
          b.setAttribute('aria-expanded', String(open));
          b.textContent = open ? '\\u25be' : '\\u25b8';
          document.querySelectorAll('tr[data-part-of="' + b.dataset.row + '"]').forEach(function (tr) {
            tr.hidden = !open;
          });
        });
      });
      """;
}
