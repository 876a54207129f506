package dev.frdiag.daemon.store;

import java.nio.file.Path;

/**
 * A stored report whose file can no longer be read as that report (removed, truncated, edited since the store
 * listed it). Only that report is lost: listing, other reports and fleet memory go on from the summaries.
 */
public final class ReportUnreadableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** @param why what is wrong with the file */
  public ReportUnreadableException(String reportId, Path file, String why) {
    super("report " + reportId + " is stored but its file " + file + " cannot be read: " + why);
  }
}
