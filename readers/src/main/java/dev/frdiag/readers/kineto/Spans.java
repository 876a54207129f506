package dev.frdiag.readers.kineto;

import java.util.Arrays;

/** A growable list of [start, end) pairs in epoch ns, held as one primitive array: a rank may run millions. */
final class Spans {
  private long[] pairs = new long[64];
  private int size;

  void add(long start, long end) {
    if (size + 2 > pairs.length) {
      pairs = Arrays.copyOf(pairs, pairs.length * 2);
    }
    pairs[size++] = start;
    pairs[size++] = end;
  }

  /** The pairs, each moved by {@code shiftNs}. */
  long[] toArray(long shiftNs) {
    long[] out = Arrays.copyOf(pairs, size);
    if (shiftNs != 0) {
      for (int i = 0; i < out.length; i++) {
        out[i] += shiftNs;
      }
    }
    return out;
  }
}
