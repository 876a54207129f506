package dev.frdiag.testing.calibration;

import java.util.List;
import java.util.Locale;

/** Right and wrong answers per confidence band, highest band first, as a Markdown table. */
public final class ConfidenceBands {
  /** The bands' lower bounds, highest first. */
  private static final double[] FLOORS = {0.9, 0.7, 0.5, 0};

  private ConfidenceBands() {}

  /** One answer: how sure it said it was, and whether it was right. */
  public record Answer(double confidence, boolean right) {}

  /** The table of {@code answers}: one row per band, its right and wrong counts. */
  public static String table(List<Answer> answers) {
    StringBuilder sb = new StringBuilder("| confidence | right | wrong |\n|---|---|---|\n");
    for (int i = 0; i < FLOORS.length; i++) {
      double floor = FLOORS[i];
      double ceiling = i == 0 ? Double.MAX_VALUE : FLOORS[i - 1];
      List<Answer> in = answers.stream().filter(a -> a.confidence() >= floor && a.confidence() < ceiling).toList();
      long right = in.stream().filter(Answer::right).count();
      String band = i == 0 ? "≥ " + floor : String.format(Locale.ROOT, "%.1f-%.2f", floor, ceiling - 0.01);
      sb.append("| ").append(band).append(" | ").append(right).append(" | ").append(in.size() - right).append(" |\n");
    }
    return sb.toString();
  }
}
