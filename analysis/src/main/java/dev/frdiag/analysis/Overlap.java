package dev.frdiag.analysis;

import java.util.Arrays;

/**
 * How much of a rank's communication its compute hid, from its device's kernel intervals: each kind's intervals
 * are united first (kernels of several streams overlap), then {@code overlap = compute + communication - active},
 * where active is the union of both. Exposed communication is what no compute hid.
 *
 * @param computeNs time some compute kernel ran
 * @param communicationNs time some communication kernel ran
 * @param overlapNs time both ran
 */
public record Overlap(long computeNs, long communicationNs, long overlapNs) {
  /** Nothing known: no device kernels. */
  public static final Overlap UNKNOWN = new Overlap(-1, -1, -1);

  /** Whether device kernels were seen. */
  public boolean known() {
    return communicationNs >= 0;
  }

  /** Communication no compute hid. */
  public long exposedNs() {
    return communicationNs - overlapNs;
  }

  /** The share of communication hidden behind compute, 0..1; 0 with no communication. */
  public double hiddenShare() {
    return communicationNs <= 0 ? 0 : (double) overlapNs / communicationNs;
  }

  /**
   * The overlap of {@code compute} and {@code communication}, each [start, end) pairs of epoch ns in any order.
   * Leaves its arguments as they are.
   */
  public static Overlap of(long[] compute, long[] communication) {
    if (compute.length == 0 && communication.length == 0) {
      return UNKNOWN;
    }
    long[] c = union(compute);
    long[] m = union(communication);
    long computeNs = length(c);
    long commNs = length(m);
    return new Overlap(computeNs, commNs, intersection(c, m));
  }

  /**
   * The union of [start, end) pairs as sorted, disjoint pairs. How many intervals cover an instant depends only on
   * how many starts and ends precede it, so starts and ends are sorted apart (primitive sorts, no boxing of
   * millions of kernels) and swept together.
   */
  static long[] union(long[] pairs) {
    int n = pairs.length / 2;
    long[] starts = new long[n];
    long[] ends = new long[n];
    for (int i = 0; i < n; i++) {
      starts[i] = pairs[2 * i];
      ends[i] = Math.max(pairs[2 * i], pairs[2 * i + 1]);
    }
    Arrays.sort(starts);
    Arrays.sort(ends);
    long[] out = new long[2 * n];
    int k = 0;
    int depth = 0;
    int j = 0;
    for (int i = 0; i < n; i++) {
      // Ends strictly before this start close intervals; an end equal to it touches and merges.
      while (j < n && ends[j] < starts[i]) {
        if (--depth == 0) {
          out[k++] = ends[j];
        }
        j++;
      }
      if (depth++ == 0) {
        out[k++] = starts[i];
      }
    }
    while (j < n) {
      if (--depth == 0) {
        out[k++] = ends[j];
      }
      j++;
    }
    return Arrays.copyOf(out, k);
  }

  private static long length(long[] union) {
    long total = 0;
    for (int i = 0; i < union.length; i += 2) {
      total += union[i + 1] - union[i];
    }
    return total;
  }

  /** The length of the intersection of two sorted disjoint unions. */
  private static long intersection(long[] a, long[] b) {
    long total = 0;
    int i = 0;
    int j = 0;
    while (i < a.length && j < b.length) {
      long s = Math.max(a[i], b[j]);
      long e = Math.min(a[i + 1], b[j + 1]);
      if (e > s) {
        total += e - s;
      }
      if (a[i + 1] < b[j + 1]) {
        i += 2;
      } else {
        j += 2;
      }
    }
    return total;
  }
}
