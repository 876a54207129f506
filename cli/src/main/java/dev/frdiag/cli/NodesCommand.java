package dev.frdiag.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.frdiag.command.DurationConverter;
import dev.frdiag.proto.v1.ListPartsRequest;
import dev.frdiag.proto.v1.ListPartsResponse;
import dev.frdiag.proto.v1.PartIncident;
import dev.frdiag.proto.v1.PartStanding;
import dev.frdiag.proto.v1.SymptomCount;
import dev.frdiag.report.UntrustedText;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code fr-diagnose nodes}: the hosts, GPUs, NICs, ports and links that keep showing up in hangs, across jobs. */
@Command(name = "nodes", mixinStandardHelpOptions = true,
    description = {"Ranks the hosts, GPUs, NICs, NIC ports and links the daemon's reports keep blaming or marking, "
        + "across every job you may read: each distinct job adds up to 1 to a part's score, fading with the "
        + "daemon's half-life, so one job's many reports do not make a bad node. Parts at the alert score get the "
        + "scheduler's line to drain their host."})
final class NodesCommand implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();

  @CommandLine.ParentCommand
  FrDiagnose parent;

  @Option(names = "--since", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "Only hangs of the last DURATION, e.g. 7d, 12h (default: every stored report).")
  Duration since;

  @Option(names = "--min-incidents", paramLabel = "N", defaultValue = "1",
      description = "Leave out parts named in fewer than N hangs (default ${DEFAULT-VALUE}).")
  int minIncidents;

  @Option(names = "--limit", paramLabel = "N", defaultValue = "50",
      description = "At most N parts, highest score first (default ${DEFAULT-VALUE}).")
  int limit;

  @Override
  public Integer call() {
    if (minIncidents < 1) {
      throw new IllegalArgumentException("--min-incidents must be at least 1, got " + minIncidents);
    }
    if (limit < 1) {
      throw new IllegalArgumentException("--limit must be at least 1, got " + limit);
    }
    ListPartsRequest.Builder request = ListPartsRequest.newBuilder().setMinIncidents(minIncidents).setLimit(limit);
    if (since != null) {
      request.setSinceMs(Instant.now().minus(since).toEpochMilli());
    }
    return FrDiagnose.withStub(parent.daemon, parent.security, parent.timeoutSeconds, stub -> {
      ListPartsResponse parts = stub.listParts(request.build());
      PrintWriter out = parent.spec.commandLine().getOut();
      out.println(parent.json() ? json(parts) : table(parts));
      out.flush();
      return ExitCode.NO_HANG;
    });
  }

  /** The table: one line per part, and under each part at the alert score its drain line. */
  static String table(ListPartsResponse r) {
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "%d part(s) named in hangs; each job adds up to 1, halved every %s; "
        + "alert at %.1f%n", r.getTotal(), days(r.getHalfLifeMs()), r.getAlertScore()));
    if (r.getPartsCount() == 0) {
      return b.append("no part matches").toString();
    }
    b.append(String.format(Locale.ROOT, "%6s %5s %6s  %-28s %-5s %-20s  %s%n", "SCORE", "JOBS", "HANGS", "PART",
        "KIND", "LAST", "SYMPTOMS"));
    for (PartStanding p : r.getPartsList()) {
      b.append(String.format(Locale.ROOT, "%6.2f %5d %6d  %-28s %-5s %-20s  %s%n", p.getScore(), p.getJobs(),
          p.getIncidents(), UntrustedText.line(display(p)), kind(p),
          Instant.ofEpochMilli(p.getLastMs()).truncatedTo(ChronoUnit.SECONDS), symptoms(p)));
      if (p.getAlerting()) {
        b.append("        ALERT ").append(UntrustedText.line(p.getSummary())).append('\n');
        if (!p.getDrain().isEmpty()) {
          b.append("        ").append(UntrustedText.line(p.getDrain())).append('\n');
        }
      }
    }
    if (r.getTotal() > r.getPartsCount()) {
      b.append(r.getTotal() - r.getPartsCount()).append(" more (--limit)\n");
    }
    return b.toString().stripTrailing();
  }

  /** One object: how the daemon scores, then the parts with the reports that named them. */
  static String json(ListPartsResponse r) {
    ObjectNode o = JSON.createObjectNode();
    o.put("as_of", Instant.ofEpochMilli(r.getAsOfMs()).toString());
    o.put("half_life_ms", r.getHalfLifeMs());
    o.put("alert_score", r.getAlertScore());
    o.put("total", r.getTotal());
    ArrayNode parts = o.putArray("parts");
    for (PartStanding p : r.getPartsList()) {
      ObjectNode n = parts.addObject();
      n.put("kind", kind(p));
      n.put("host", p.getHost());
      n.put("part", p.getPart());
      n.put("score", p.getScore());
      n.put("jobs", p.getJobs());
      n.put("incidents", p.getIncidents());
      n.put("as_culprit", p.getAsCulprit());
      n.put("first", Instant.ofEpochMilli(p.getFirstMs()).toString());
      n.put("last", Instant.ofEpochMilli(p.getLastMs()).toString());
      ObjectNode symptoms = n.putObject("symptoms");
      for (SymptomCount s : p.getSymptomsList()) {
        symptoms.put(s.getSymptom().name(), s.getIncidents());
      }
      n.put("alerting", p.getAlerting());
      n.put("summary", p.getSummary());
      if (!p.getDrain().isEmpty()) {
        n.put("drain", p.getDrain());
      }
      ArrayNode reports = n.putArray("reports");
      for (PartIncident i : p.getRecentList()) {
        reports.addObject().put("report_id", i.getReportId()).put("job", i.getJobId())
            .put("at", Instant.ofEpochMilli(i.getAtMs()).toString()).put("symptom", i.getSymptom().name())
            .put("role", i.getCulprit() ? "culprit" : "marked");
      }
    }
    return o.toPrettyString();
  }

  private static String display(PartStanding p) {
    return p.getPart().isEmpty() ? p.getHost() : p.getHost() + " " + p.getPart();
  }

  private static String kind(PartStanding p) {
    return p.getKind().name().replace("PART_", "").toLowerCase(Locale.ROOT);
  }

  private static String symptoms(PartStanding p) {
    return p.getSymptomsList().stream().map(s -> s.getSymptom() + " \u00d7" + s.getIncidents())
        .collect(Collectors.joining(", "));
  }

  private static String days(long ms) {
    return ms % 86_400_000L == 0 ? ms / 86_400_000L + "d" : Duration.ofMillis(ms).toString();
  }
}
