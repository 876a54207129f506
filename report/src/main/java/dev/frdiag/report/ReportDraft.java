package dev.frdiag.report;

import dev.frdiag.analysis.Diagnosis;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A report in the making: what an analysis did, step by step, until its diagnosis makes it a {@link Report}. Every
 * report is assembled here (the daemon's for an incident, on demand or for a straggler, and {@code fr-diagnose
 * analyze}'s), so they all say the same things in the same words. Not thread-safe: one analysis builds it, handing it
 * on between its stages.
 */
public final class ReportDraft {
  /** How the timeline's entry for the moment the hang began starts; tools that time incidents look for it. */
  public static final String FIRST_DIVERGENCE = "first divergence";

  private final String job;
  private final Report.Trigger trigger;
  private Map<String, String> scheduler = Map.of();
  private final List<Report.TimelineEntry> steps = new ArrayList<>();

  private ReportDraft(String job, Report.Trigger trigger) {
    this.job = Objects.requireNonNull(job, "job");
    this.trigger = Objects.requireNonNull(trigger, "trigger");
  }

  /** A report on {@code job}, started by {@code trigger}, with no step yet. */
  public static ReportDraft of(String job, Report.Trigger trigger) {
    return new ReportDraft(job, trigger);
  }

  /** Where the job ran, as its scheduler and launcher name it ({@link Report#scheduler()}). */
  public ReportDraft scheduler(Map<String, String> names) {
    this.scheduler = Objects.requireNonNull(names, "names");
    return this;
  }

  /** Adds {@code event}, which happened at {@code at}, after the steps so far. */
  public ReportDraft step(Instant at, String event) {
    steps.add(new Report.TimelineEntry(at, event));
    return this;
  }

  /**
   * The report of {@code diagnosis}, made at {@code at}, whose last step was {@code lastStep}. Its timeline starts
   * with the moment the hang began, when the diagnosis knows it (the stuck collective's issue by its first member):
   * the hang began before anyone noticed it.
   *
   * @param reportId the store's id of the report; empty for one that is not stored
   */
  public Report finish(String reportId, Diagnosis diagnosis, Instant at, String lastStep) {
    List<Report.TimelineEntry> timeline = new ArrayList<>(steps.size() + 2);
    if (diagnosis.stuckSinceNs() > 0 && diagnosis.collective() != null) {
      timeline.add(new Report.TimelineEntry(Instant.ofEpochSecond(0, diagnosis.stuckSinceNs()),
          FIRST_DIVERGENCE + ": " + diagnosis.collective().label() + " issued by its first member; it never "
              + "completed"));
    }
    timeline.addAll(steps);
    timeline.add(new Report.TimelineEntry(at, lastStep));
    return Report.of(reportId, job, trigger, at, diagnosis, timeline, scheduler);
  }
}
