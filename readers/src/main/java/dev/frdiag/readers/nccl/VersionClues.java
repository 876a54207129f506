package dev.frdiag.readers.nccl;

/**
 * What a log tells of the NCCL version: the first version banner if one was printed, else bounds on the 2.x minor
 * version narrowed by how lines are spelled. Each bound keeps the first clue that set it, for the report to quote.
 */
final class VersionClues {
  private String banner;
  private String bannerBasis;
  private int low;
  private String lowBasis;
  private int high = Integer.MAX_VALUE;
  private String highBasis;

  /**
   * Takes the version printed at {@code from} (up to a space or comma) when it is the first one and starts with a
   * digit; {@code basis} names where, completed by the line number.
   */
  void banner(String s, int from, String basis, long line) {
    int end = from;
    while (end < s.length() && s.charAt(end) > ' ' && s.charAt(end) != ',') {
      end++;
    }
    if (banner == null && end > from && from < s.length() && Ascii.isDigit(s.charAt(from))) {
      banner = s.substring(from, end);
      bannerBasis = basis + line;
    }
  }

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

  /** The printed version, else the inferred one, or null when no line gave a clue. */
  NcclVersion version() {
    return banner != null ? new NcclVersion(banner, false, bannerBasis) : infer();
  }

  private NcclVersion infer() {
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
