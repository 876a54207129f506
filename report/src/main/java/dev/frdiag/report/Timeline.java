package dev.frdiag.report;

import dev.frdiag.analysis.Diagnosis;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A report's timeline as an analysis builds it: its steps in the order they happened, and the moment the hang began,
 * which comes first. Every report's timeline is built here, so the daemon's and {@code fr-diagnose analyze}'s say the
 * same things in the same words. Not thread-safe: one analysis builds it, handing it on between its stages.
 */
public final class Timeline {
  /** How the entry for the moment the hang began starts; tools that time incidents look for it. */
  public static final String FIRST_DIVERGENCE = "first divergence";

  private final List<Report.TimelineEntry> entries = new ArrayList<>();

  /** Adds {@code event}, which happened at {@code at}, after the entries so far. */
  public Timeline add(Instant at, String event) {
    entries.add(new Report.TimelineEntry(at.toString(), Objects.requireNonNull(event, "event")));
    return this;
  }

  /**
   * Puts the moment the hang began first, when {@code diagnosis} knows it: the stuck collective's issue by its
   * first member. It comes before everything else because the hang began before anyone noticed it.
   */
  public Timeline firstDivergence(Diagnosis diagnosis) {
    if (diagnosis.stuckSinceNs() > 0 && diagnosis.collective() != null) {
      entries.add(0, new Report.TimelineEntry(Instant.ofEpochSecond(0, diagnosis.stuckSinceNs()).toString(),
          FIRST_DIVERGENCE + ": " + diagnosis.collective().label() + " issued by its first member; it never "
              + "completed"));
    }
    return this;
  }

  /** The entries so far. */
  public List<Report.TimelineEntry> entries() {
    return List.copyOf(entries);
  }
}
