package dev.frdiag.report;

import dev.frdiag.analysis.CollectiveRef;
import dev.frdiag.analysis.Culprit;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.FabricMap;
import dev.frdiag.analysis.Lateness;
import dev.frdiag.analysis.Ranks;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Renders a {@link Report} for people: plain text for the terminal, or Markdown for the report file. */
public final class ReportText {
  private static final DateTimeFormatter TIME_OF_DAY =
      DateTimeFormatter.ofPattern("HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  /** Ranks listed in the text's lateness section. */
  private static final int LATENESS_ROWS = 8;

  private ReportText() {}

  /** The terminal rendering: the verdict in one sentence first, then the details. */
  public static String plain(Report r) {
    return render(r, false);
  }

  /** The Markdown rendering stored next to the JSON. */
  public static String markdown(Report r) {
    return render(r, true);
  }

  private static String render(Report r, boolean md) {
    StringBuilder sb = new StringBuilder();
    String title = r.verdict() + " · " + r.symptom() + " · confidence " + String.format("%.2f", r.confidence());
    if (md) {
      sb.append("# frdiag report ").append(safe(md, r.reportId().isEmpty() ? r.job() : r.reportId()))
          .append("\n\n");
      sb.append("**").append(title).append("**\n\n").append(safe(md, r.headline())).append("\n\n");
    } else {
      sb.append(safe(md, r.headline())).append("\n\n").append("  ").append(title).append("\n");
    }
    section(sb, md, "Summary");
    field(sb, md, "job", r.job());
    if (!r.reportId().isEmpty()) {
      field(sb, md, "report", r.reportId());
    }
    if (!r.scheduler().isEmpty()) {
      StringBuilder names = new StringBuilder();
      r.scheduler().forEach((k, v) -> names.append(names.length() == 0 ? "" : ", ").append(k).append('=').append(v));
      field(sb, md, "scheduler", names.toString());
    }
    field(sb, md, "created", DateTimeFormatter.ISO_INSTANT.format(r.createdAt().truncatedTo(ChronoUnit.SECONDS))
        + " (trigger: " + r.trigger().wire() + ")");
    if (r.recoveredAt() != null) {
      field(sb, md, "recovered", DateTimeFormatter.ISO_INSTANT.format(r.recoveredAt().truncatedTo(ChronoUnit.SECONDS))
          + " (the job moved again by itself)");
    }
    CollectiveRef c = r.collective();
    if (c != null) {
      field(sb, md, "collective", c.processGroup() + (c.processGroupDesc().isEmpty() ? ""
          : " (" + c.processGroupDesc() + ")") + (c.isP2p() ? " p2p seq " : " seq ") + c.seq() + " " + c.op()
          + (c.commsId().isEmpty() ? "" : "  comms_id " + c.commsId()));
    }
    field(sb, md, "culprit ranks", r.culpritRanks().isEmpty() ? "none" : Ranks.compact(r.culpritRanks()));
    if (!r.culpritHosts().isEmpty()) {
      field(sb, md, "culprit hosts", String.join(", ", r.culpritHosts()));
    }
    if (!r.exclude().isEmpty()) {
      field(sb, md, "exclude", "srun --exclude=" + String.join(",", r.exclude()));
    }
    if (!r.culprits().isEmpty()) {
      section(sb, md, "Culprits");
      for (Culprit k : r.culprits()) {
        item(sb, md, "rank " + k.rank() + "  host " + k.host() + (k.pid() > 0 ? "  pid " + k.pid() : "")
            + (k.cudaDevice() >= 0 ? "  cuda:" + k.cudaDevice() : "")
            + (k.lastOp().isEmpty() ? "" : "  newest record: " + k.lastOp()));
        if (!k.stuckAt().isEmpty()) {
          sb.append(md ? "    - " : "      ").append(safe(md, CulpritStacks.stuckAt(k))).append('\n');
        }
        for (String frame : k.stack()) {
          sb.append(md ? "    - " : "      at ").append(safe(md, frame)).append('\n');
        }
        for (Culprit.PythonThread t : k.threads()) {
          sb.append(md ? "    - " : "      ").append(safe(md, CulpritStacks.title(t))).append('\n');
          for (String frame : t.frames()) {
            sb.append(md ? "        - " : "        at ").append(safe(md, frame)).append('\n');
          }
        }
      }
    }
    if (!r.evidence().isEmpty()) {
      section(sb, md, "Evidence");
      for (Evidence e : r.evidence()) {
        item(sb, md, "[" + e.kind().wire() + "] " + e.detail());
      }
    }
    if (r.fabric() != null) {
      network(sb, md, r.fabric());
    }
    if (r.lateness() != null && !r.lateness().ranks().isEmpty()) {
      lateness(sb, md, r.lateness());
    }
    if (!r.rankStates().isEmpty()) {
      section(sb, md, "Where every rank is");
      for (Diagnosis.RankGroup g : r.rankStates()) {
        item(sb, md, g.label() + ": ranks " + compact(g.ranks()));
      }
    }
    if (!r.timeline().isEmpty()) {
      section(sb, md, "Timeline");
      Instant first = r.timeline().get(0).at();
      for (Report.TimelineEntry t : r.timeline()) {
        Instant at = t.at();
        // Offsets read well within an incident; an offline dump analysed days later gets full dates instead.
        boolean sameDay = Duration.between(first, at).toHours() < 24;
        String when = !sameDay ? t.time()
            : TIME_OF_DAY.format(at) + String.format(" (+%.3f s)", Duration.between(first, at).toNanos() / 1e9);
        item(sb, md, when + "  " + t.event());
      }
    }
    section(sb, md, "Recommended action");
    sb.append(md ? "" : "  ").append(safe(md, r.recommendation())).append('\n');
    return sb.toString();
  }

  /** The culprits' and the latest ranks' figures, then the most skewed collectives. */
  private static void lateness(StringBuilder sb, boolean md, Lateness l) {
    section(sb, md, "Lateness (" + l.collectives() + " collectives, arrival = " + l.basis() + ")");
    List<Lateness.Rank> rows = new ArrayList<>(l.ranks());
    rows.sort(Comparator.comparing(Lateness.Rank::culprit).thenComparingLong(Lateness.Rank::medianLateNs)
        .reversed());
    for (Lateness.Rank r : rows.subList(0, Math.min(LATENESS_ROWS, rows.size()))) {
      item(sb, md, "rank " + r.rank() + (r.culprit() ? " (culprit)" : "") + ": last at " + r.timesLast() + " of "
          + r.collectives() + ", median " + LatenessPicture.ms(r.medianLateNs()) + " late (max "
          + LatenessPicture.ms(r.maxLateNs()) + "), waited " + LatenessPicture.ms(r.waitedNs())
          + (r.hiddenShare() < 0 ? "" : String.format(Locale.ROOT, ", %.0f %% of communication hidden, %s exposed",
          100 * r.hiddenShare(), LatenessPicture.ms(r.exposedCommNs()))));
    }
    if (rows.size() > LATENESS_ROWS) {
      item(sb, md, (rows.size() - LATENESS_ROWS) + " more ranks less late");
    }
    for (Lateness.Collective c : l.worst().subList(0, Math.min(3, l.worst().size()))) {
      item(sb, md, "skew " + LatenessPicture.ms(c.skewNs()) + " at " + c.collective() + ", last rank "
          + c.lastRank() + (c.latencyNs() == 0 ? "" : ", latency " + LatenessPicture.ms(c.latencyNs()))
          + (c.busGbps() == 0 ? "" : String.format(Locale.ROOT, ", bus bandwidth %.2f GB/s", c.busGbps())));
    }
  }

  /** Each marked part of the network picture as one path, host → GPU → NIC → port, with what marks it. */
  private static void network(StringBuilder sb, boolean md, FabricMap map) {
    List<String> lines = new ArrayList<>();
    for (FabricMap.Host h : map.hosts()) {
      if (!h.marks().isEmpty()) {
        lines.add(h.name() + ": " + kinds(h.marks()));
      }
      for (FabricMap.Gpu g : h.gpus()) {
        if (!g.marks().isEmpty()) {
          lines.add(h.name() + " → " + (g.rank() >= 0 ? "rank " + g.rank() : "GPU")
              + (g.device() >= 0 ? " (cuda:" + g.device() + ")" : "") + (g.nic().isEmpty() ? "" : " → " + g.nic())
              + ": " + kinds(g.marks()));
        }
      }
      for (FabricMap.Nic n : h.nics()) {
        String users = h.gpus().stream().filter(g -> g.nic().equals(n.name()) && g.rank() >= 0)
            .map(g -> "rank " + g.rank()).reduce((a, b) -> a + ", " + b).map(u -> " (" + u + ")").orElse("");
        if (!n.marks().isEmpty()) {
          lines.add(h.name() + " → " + n.name() + users + ": " + kinds(n.marks()));
        }
        for (FabricMap.Port p : n.ports()) {
          if (p.marks().stream().anyMatch(FabricMap.Mark::failing)) {
            lines.add(h.name() + " → " + n.name() + users + " → port " + p.number() + ": " + kinds(p.marks()));
          }
        }
      }
    }
    if (lines.isEmpty()) {
      return;
    }
    section(sb, md, "Network (host → GPU → NIC → port)");
    lines.forEach(l -> item(sb, md, l));
  }

  private static String kinds(List<FabricMap.Mark> marks) {
    Map<String, Integer> count = new LinkedHashMap<>();
    // A peer's address without its port ("10.0.35.1<49189>"): one peer host, however many connections failed.
    marks.forEach(m -> count.merge(m.kind().wire() + (m.peer().isEmpty() ? ""
        : " to peer " + m.peer().replaceFirst("<.*", "")), 1, Integer::sum));
    List<String> out = new ArrayList<>();
    count.forEach((k, n) -> out.add(n == 1 ? k : k + " ×" + n));
    return String.join(", ", out);
  }

  private static void section(StringBuilder sb, boolean md, String name) {
    sb.append(md ? "\n## " + name + "\n\n" : "\n" + name + ":\n");
  }

  // Every value below may carry text from ranks, dumps or logs: it is made safe where it is written.
  private static void field(StringBuilder sb, boolean md, String name, String value) {
    sb.append(md ? "- **" + name + "**: " + safe(md, value) + "\n"
        : String.format("  %-14s %s%n", name, safe(md, value)));
  }

  private static void item(StringBuilder sb, boolean md, String text) {
    sb.append(md ? "- " : "  - ").append(safe(md, text)).append('\n');
  }

  private static String safe(boolean md, String text) {
    return md ? UntrustedText.markdown(text) : UntrustedText.line(text);
  }

  private static String compact(List<Integer> ranks) {
    return Ranks.compact(ranks);
  }
}
