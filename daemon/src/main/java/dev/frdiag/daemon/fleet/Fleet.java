package dev.frdiag.daemon.fleet;

import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.daemon.store.StoredReport;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportSink;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon's fleet memory: rebuilt from the report store at start, then told every report as it is written (a
 * {@link ReportSink}), and telling its listeners when a part reaches the alert score. Nothing of it is written
 * anywhere else: the store is what survives a restart.
 */
public final class Fleet implements ReportSink {
  private static final Logger log = LoggerFactory.getLogger(Fleet.class);

  private final FleetMemory memory;
  private final Clock clock;
  private final List<Consumer<Standing>> listeners = new CopyOnWriteArrayList<>();

  public Fleet(FleetSettings settings, Clock clock) {
    this.memory = new FleetMemory(settings);
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** Reads the summary of every report {@code store} holds, without alerting on any (they are history). */
  public Fleet rebuild(ReportStore store) {
    long t0 = System.nanoTime();
    Instant now = clock.instant();
    long reports = 0;
    for (String job : store.jobs()) {
      for (StoredReport r : store.list(job)) {
        memory.add(r, now, false);
        reports++;
      }
    }
    memory.settle(now);
    log.info("fleet memory: {} parts from {} stored reports ({} naming hardware) in {} ms", memory.parts(),
        reports, memory.reportsRead(), (System.nanoTime() - t0) / 1_000_000);
    return this;
  }

  /** Tells {@code listener} of every part that reaches the alert score, on the thread that wrote the report. */
  public void onAlert(Consumer<Standing> listener) {
    listeners.add(listener);
  }

  @Override
  public void accept(Report report) {
    if (report.recoveredAt() != null) {
      // The same report, written again when its hang ended by itself: what it counted was a slowdown.
      memory.retract(StoredReport.of(report));
      return;
    }
    for (Standing s : memory.add(StoredReport.of(report), clock.instant(), true)) {
      log.warn("fleet: {}: {} (score {}); drain: {}", s.part().display(), s.summary(),
          String.format(java.util.Locale.ROOT, "%.2f", s.score()), s.drain().isEmpty() ? "-" : s.drain());
      for (Consumer<Standing> l : listeners) {
        try {
          l.accept(s);
        } catch (RuntimeException e) {
          log.warn("fleet alert listener failed for {}: {}", s.part().display(), e.toString());
        }
      }
    }
  }

  /**
   * Every part named in the reports of the jobs {@code mayRead} lets the caller see, highest score first.
   *
   * @param readsAll whether the caller may read every job (only then do jobs beyond the per-part bound count)
   * @param since only reports from then on (null: all)
   */
  public List<Standing> standings(Predicate<String> mayRead, boolean readsAll, Instant since, int minIncidents) {
    return memory.standings(clock.instant(), mayRead, readsAll, since, minIncidents);
  }

  /** The settings it scores by. */
  public FleetSettings settings() {
    return memory.settings();
  }

  /** Parts kept now. */
  public int parts() {
    return memory.parts();
  }
}
