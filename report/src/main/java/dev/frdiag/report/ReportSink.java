package dev.frdiag.report;

/** Receives each report as soon as it is written (incident watchers, notifiers). */
@FunctionalInterface
public interface ReportSink {
  /** Called on the daemon's investigation thread; must not block. */
  void accept(Report report);
}
