package dev.frdiag.daemon.store;

import dev.frdiag.analysis.Ranks;
import dev.frdiag.report.Report;

/**
 * A report made but not on disk: the data dir refused it (full, read-only). It waits in memory and is written when
 * the disk allows; until then nobody is told it exists, but whoever asked for it is told this, at once.
 */
public final class ReportNotStoredException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** @param why what the disk said, or null */
  public ReportNotStoredException(Report report, String why) {
    super("the daemon's data dir refuses writes" + (why == null ? "" : " (" + why + ")") + ": report "
        + report.reportId() + " (" + report.verdict() + " " + report.symptom()
        + (report.culpritRanks().isEmpty() ? "" : ", culprit ranks " + Ranks.compact(report.culpritRanks()))
        + ") waits in memory and is written when the disk allows; free space under the data dir");
  }
}
