package dev.frdiag.readers.nccl;

/**
 * Bounds on the NCCL 2.x minor version, narrowed by how lines are spelled when the log has no version banner.
 * Each bound keeps the first clue that set it, for the report to quote.
 */
final class VersionClues {
  private int low;
  private String lowBasis;
  private int high = Integer.MAX_VALUE;
  private String highBasis;

  /** The log was written by 2.{@code minor} or later. */
  void atLeast(int minor, String basis, long line) {
    if (minor > low) {
      low = minor;
      lowBasis = basis + " (line " + line + ")";
    }
  }

  /** The log was written by 2.{@code minor} or earlier. */
  void atMost(int minor, String basis, long line) {
    if (minor < high) {
      high = minor;
      highBasis = basis + " (line " + line + ")";
    }
  }

  /** The inferred version, or null when no line gave a clue. */
  NcclVersion infer() {
    if (low == 0 && high == Integer.MAX_VALUE) {
      return null;
    }
    if (low > high) {
      return new NcclVersion("unknown", true,
          "conflicting clues: 2." + low + " or later from " + lowBasis + ", 2." + high + " or earlier from "
              + highBasis);
    }
    if (high == Integer.MAX_VALUE) {
      return new NcclVersion("2." + low + " or later", true, lowBasis);
    }
    if (low == 0) {
      return new NcclVersion("2." + high + " or earlier", true, highBasis);
    }
    String range = low == high ? "2." + low : "2." + low + " to 2." + high;
    return new NcclVersion(range, true, lowBasis + "; " + highBasis);
  }
}
