package dev.frdiag.report;

import dev.frdiag.analysis.CollectiveRef;
import dev.frdiag.analysis.Culprit;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.StuckCollective;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * A postmortem report, schema {@value #SCHEMA}: a diagnosis plus when and why it was made.
 *
 * <p>Its JSON form ({@link ReportJson}) is a public contract: fields are only ever added.
 *
 * @param schema always {@value #SCHEMA}
 * @param reportId unique and stable, e.g. "job42-000003"; empty for offline reports
 * @param job the job id
 * @param createdAt ISO-8601 instant
 * @param trigger what started the analysis, e.g. "stall", "rank_lost", "watchdog_timeout", "on_demand", "offline"
 * @param timeline what happened when, oldest first
 */
public record Report(String schema, String reportId, String job, Verdict verdict, Symptom symptom,
    String headline, List<Integer> culpritRanks, List<String> culpritHosts, CollectiveRef collective,
    double confidence, List<Evidence> evidence, String createdAt, String trigger, List<TimelineEntry> timeline,
    List<Culprit> culprits, List<StuckCollective> stuckCollectives, List<Diagnosis.RankGroup> rankStates,
    String recommendation) {

  public static final String SCHEMA = "frdiag.report/v1";

  public Report {
    Objects.requireNonNull(verdict, "verdict");
    Objects.requireNonNull(symptom, "symptom");
    culpritRanks = culpritRanks == null ? List.of() : List.copyOf(culpritRanks);
    culpritHosts = culpritHosts == null ? List.of() : List.copyOf(culpritHosts);
    evidence = evidence == null ? List.of() : List.copyOf(evidence);
    timeline = timeline == null ? List.of() : List.copyOf(timeline);
    culprits = culprits == null ? List.of() : List.copyOf(culprits);
    stuckCollectives = stuckCollectives == null ? List.of() : List.copyOf(stuckCollectives);
    rankStates = rankStates == null ? List.of() : List.copyOf(rankStates);
  }

  /** One moment in an incident. */
  public record TimelineEntry(String at, String event) {}

  /** Wraps a diagnosis into a report. */
  public static Report of(String reportId, String job, String trigger, Instant createdAt, Diagnosis d,
      List<TimelineEntry> timeline) {
    return new Report(SCHEMA, reportId, job, d.verdict(), d.symptom(), d.headline(), d.culpritRanks(),
        d.culpritHosts(), d.collective(), d.confidence(), d.evidence(), createdAt.toString(), trigger, timeline,
        d.culprits(), d.stuck(), d.rankStates(), d.recommendation());
  }
}
