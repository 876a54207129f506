package dev.frdiag.agent;

import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;

/** Parses the rank lists of {@code --local-ranks}: "0-7", "0,2,4-6", or "auto" for ranks found at run time. */
final class RankListConverter implements CommandLine.ITypeConverter<RankListConverter.RankList> {
  /** More ranks than any job has; a range beyond it is a typo. */
  static final int MAX_RANKS = 1 << 20;

  /** The ranks of a rank list, in the order given; none when they are to be discovered ({@code auto}). */
  record RankList(List<Integer> ranks, boolean auto) {}

  @Override
  public RankList convert(String value) {
    if (value.trim().equals("auto")) {
      return new RankList(List.of(), true);
    }
    List<Integer> ranks = new ArrayList<>();
    for (String part : value.split(",", -1)) {
      String p = part.trim();
      String[] ends = p.split("-", -1);
      if (ends.length > 2 || !ends[0].matches("\\d{1,7}") || ends.length == 2 && !ends[1].matches("\\d{1,7}")) {
        throw bad(value, "'" + p + "' is neither a rank nor a range");
      }
      int from = Integer.parseInt(ends[0]);
      int to = ends.length == 2 ? Integer.parseInt(ends[1]) : from;
      if (to < from) {
        throw bad(value, "range " + p + " goes down");
      }
      if (to >= MAX_RANKS || ranks.size() + (to - from + 1) > MAX_RANKS) {
        throw bad(value, "more than " + MAX_RANKS + " ranks");
      }
      for (int r = from; r <= to; r++) {
        ranks.add(r);
      }
    }
    return new RankList(List.copyOf(ranks), false);
  }

  private static CommandLine.TypeConversionException bad(String value, String why) {
    return new CommandLine.TypeConversionException("'" + value + "' is not a rank list: " + why
        + " (use e.g. 0-7, 0,2,4-6 or auto)");
  }
}
