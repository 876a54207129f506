package dev.frdiag.report;

import dev.frdiag.analysis.Lateness;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * Draws a straggler analysis' {@link Lateness} for the report page: one row per rank, one cell per stretch of the
 * window, each coloured by how late the rank arrived there (its median arrival minus the other members'), from
 * early (grey) through the threshold (light red) to three times it (dark red); the culprits' rows outlined. Below,
 * each rank's figures and the collectives whose arrivals spread most.
 */
final class LatenessPicture {
  /** Rows drawn: the culprits, then the latest ranks; a job of thousands of ranks says how many it left out. */
  static final int ROWS_SHOWN = 48;
  private static final int CELL_W = 26;
  private static final int CELL_H = 14;
  private static final int LABEL_W = 110;

  private LatenessPicture() {}

  static void draw(StringBuilder b, Lateness l) {
    if (l == null || l.ranks().isEmpty()) {
      return;
    }
    List<Lateness.Rank> rows = shown(l.ranks());
    int buckets = rows.stream().mapToInt(r -> r.lateByBucketNs().size()).max().orElse(0);
    int w = LABEL_W + buckets * CELL_W + 10;
    int h = rows.size() * (CELL_H + 3) + 24;
    b.append("<section id=\"lateness\"><h2>Lateness</h2><p class=\"sub\">each rank's arrival at the ")
        .append(l.collectives()).append(" collectives joined (by ").append(h(l.joinedBy())).append("; arrival = ")
        .append(h(l.basis())).append(") minus the other members' median, per ").append(ms(l.bucketNs()))
        .append(" of the window; a wait counts from ").append(ms(l.thresholdNs())).append(" on")
        .append(l.ranks().size() > rows.size() ? "; " + (l.ranks().size() - rows.size()) + " ranks less late not "
            + "drawn" : "").append(".</p>");
    b.append("<svg class=\"lateness\" role=\"img\" viewBox=\"0 0 ").append(w).append(' ').append(h)
        .append("\" width=\"").append(w).append("\" height=\"").append(h).append("\">");
    int y = 4;
    for (Lateness.Rank r : rows) {
      b.append("<g class=\"row").append(r.culprit() ? " culprit" : "").append("\" data-rank=\"").append(r.rank())
          .append("\"><text x=\"0\" y=\"").append(y + CELL_H - 3).append("\">rank ").append(r.rank())
          .append("</text>");
      for (int i = 0; i < r.lateByBucketNs().size(); i++) {
        Long late = r.lateByBucketNs().get(i);
        b.append("<rect x=\"").append(LABEL_W + i * CELL_W).append("\" y=\"").append(y).append("\" width=\"")
            .append(CELL_W - 2).append("\" height=\"").append(CELL_H).append("\" fill=\"")
            .append(colour(late, l.thresholdNs())).append("\"><title>")
            .append(late == null ? "no collective" : "rank " + r.rank() + ": " + ms(late)).append("</title></rect>");
      }
      if (r.culprit()) {
        b.append("<rect class=\"outline\" x=\"").append(LABEL_W - 2).append("\" y=\"").append(y - 2)
            .append("\" width=\"").append(buckets * CELL_W + 2).append("\" height=\"").append(CELL_H + 4)
            .append("\"/>");
      }
      b.append("</g>");
      y += CELL_H + 3;
    }
    b.append("<text class=\"dim\" x=\"").append(LABEL_W).append("\" y=\"").append(y + 14)
        .append("\">time →</text></svg>");
    b.append("<p class=\"legend\"><span><i class=\"cell\" style=\"background:").append(colour(0L, 1))
        .append("\"></i> on time or early</span><span><i class=\"cell\" style=\"background:")
        .append(colour(l.thresholdNs(), l.thresholdNs())).append("\"></i> ").append(ms(l.thresholdNs()))
        .append(" late</span><span><i class=\"cell\" style=\"background:")
        .append(colour(3 * l.thresholdNs(), l.thresholdNs())).append("\"></i> 3× that</span></p>");
    b.append("<table class=\"list\" id=\"lateness-ranks\"><tr><th>rank</th><th>host</th><th>collectives</th>"
        + "<th>last</th><th>median late</th><th>max late</th><th>waited</th><th>clock offset</th>"
        + "<th>comm. hidden</th><th>comm. exposed</th></tr>");
    for (Lateness.Rank r : rows) {
      b.append("<tr").append(r.culprit() ? " class=\"culprit\"" : "").append("><td>").append(r.rank())
          .append("</td><td>").append(h(r.host())).append("</td><td>").append(r.collectives()).append("</td><td>")
          .append(r.timesLast()).append("</td><td>").append(ms(r.medianLateNs())).append("</td><td>")
          .append(ms(r.maxLateNs())).append("</td><td>").append(ms(r.waitedNs())).append("</td><td>")
          .append(ms(r.clockOffsetNs())).append("</td><td>")
          .append(r.hiddenShare() < 0 ? "–" : String.format(Locale.ROOT, "%.0f %%", 100 * r.hiddenShare()))
          .append("</td><td>").append(r.exposedCommNs() < 0 ? "–" : ms(r.exposedCommNs())).append("</td></tr>");
    }
    b.append("</table>");
    if (!l.worst().isEmpty()) {
      b.append("<h3>Most skewed collectives</h3><table class=\"list\" id=\"lateness-worst\"><tr><th>collective</th>"
          + "<th>last</th><th>skew</th><th>latency</th><th>bus bandwidth</th></tr>");
      for (Lateness.Collective c : l.worst()) {
        b.append("<tr><td>").append(h(c.collective())).append("</td><td>rank ").append(c.lastRank())
            .append("</td><td>").append(ms(c.skewNs())).append("</td><td>")
            .append(c.latencyNs() == 0 ? "–" : ms(c.latencyNs())).append("</td><td>")
            .append(c.busGbps() == 0 ? "–" : String.format(Locale.ROOT, "%.2f GB/s", c.busGbps()))
            .append("</td></tr>");
      }
      b.append("</table>");
    }
    b.append("</section>");
  }

  /** The culprits first, then the latest ranks by median lateness, at most {@link #ROWS_SHOWN}, in rank order. */
  static List<Lateness.Rank> shown(List<Lateness.Rank> ranks) {
    if (ranks.size() <= ROWS_SHOWN) {
      return ranks;
    }
    List<Lateness.Rank> byLate = new ArrayList<>(ranks);
    byLate.sort(Comparator.comparing(Lateness.Rank::culprit).thenComparingLong(Lateness.Rank::medianLateNs)
        .reversed());
    List<Lateness.Rank> out = new ArrayList<>(byLate.subList(0, ROWS_SHOWN));
    out.sort(Comparator.comparingInt(Lateness.Rank::rank));
    return out;
  }

  /** Grey up to on time, then white to red as lateness nears three times the threshold. */
  static String colour(Long lateNs, long thresholdNs) {
    if (lateNs == null) {
      return "#ffffff";
    }
    if (lateNs <= 0) {
      return "#e0e0e0";
    }
    double f = Math.min(1, lateNs / (3.0 * Math.max(1, thresholdNs)));
    int g = (int) Math.round(235 - 200 * f);
    return String.format(Locale.ROOT, "#%02x%02x%02x", 250 - (int) (40 * f), g, g);
  }

  static String ms(long ns) {
    // No "-0.0 ms" for a rank a few microseconds early.
    return String.format(Locale.ROOT, "%.1f ms", Math.abs(ns) < 50_000 ? 0 : ns / 1e6);
  }

  private static String h(String text) {
    return UntrustedText.html(text);
  }
}
