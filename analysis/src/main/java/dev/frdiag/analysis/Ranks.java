package dev.frdiag.analysis;

import java.util.List;

/** Formatting of rank lists the way every frdiag output prints them. */
public final class Ranks {
  private Ranks() {}

  /** "[0-3, 8, 10, 11]": runs of three or more consecutive ranks collapsed into a range. */
  public static String compact(List<Integer> ranks) {
    if (ranks.isEmpty()) {
      return "[]";
    }
    List<Integer> sorted = ranks.stream().sorted().toList();
    StringBuilder sb = new StringBuilder("[");
    int i = 0;
    while (i < sorted.size()) {
      int j = i;
      while (j + 1 < sorted.size() && sorted.get(j + 1) == sorted.get(j) + 1) {
        j++;
      }
      if (sb.length() > 1) {
        sb.append(", ");
      }
      sb.append(sorted.get(i));
      if (j > i + 1) {
        sb.append('-').append(sorted.get(j));
      } else if (j == i + 1) {
        sb.append(", ").append(sorted.get(j));
      }
      i = j + 1;
    }
    return sb.append(']').toString();
  }
}
