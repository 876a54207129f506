package dev.frdiag.readers.nccl;

/** Digits and numbers read straight from a line by index, so the per-line path needs no regular expression. */
final class Ascii {
  private Ascii() {}

  static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  static boolean isHostChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
        || c == '.';
  }

  static boolean allDigits(String s, int from, int to) {
    for (int i = from; i < to; i++) {
      if (!isDigit(s.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  /** The decimal number in {@code [from, to)}, which the caller checked holds only digits (at most 18). */
  static long digits(String s, int from, int to) {
    long v = 0;
    for (int i = from; i < to && i < from + 18; i++) {
      v = v * 10 + (s.charAt(i) - '0');
    }
    return v;
  }

  /** The hex number in {@code [from, to)}, or -1 when it is not one. */
  static long hex(String s, int from, int to) {
    if (to <= from || to - from > 15) {
      return -1;
    }
    long v = 0;
    for (int i = from; i < to; i++) {
      int d = Character.digit(s.charAt(i), 16);
      if (d < 0) {
        return -1;
      }
      v = (v << 4) | d;
    }
    return v;
  }
}
