package dev.frdiag.readers.kineto;

import java.math.BigDecimal;

/**
 * Kineto's {@code ts} and {@code dur} to nanoseconds. Kineto prints microseconds with exactly three decimals (ns
 * / 1000 "." ns % 1000), relative to {@code baseTimeNanoseconds}; older traces print whole epoch microseconds.
 * A double cannot hold 19 digits, so the text is read digit by digit.
 */
final class TraceTimes {
  private TraceTimes() {}

  /**
   * The nanoseconds that {@code len} characters of microseconds from {@code off} say.
   *
   * @throws NumberFormatException when they are no decimal number
   */
  static long nanos(char[] text, int off, int len) {
    long whole = 0;
    long frac = 0;
    int fracDigits = 0;
    boolean negative = false;
    boolean dot = false;
    int end = off + len;
    for (int i = off; i < end; i++) {
      char c = text[i];
      if (c >= '0' && c <= '9') {
        if (!dot) {
          whole = whole * 10 + (c - '0');
        } else if (fracDigits < 3) {
          frac = frac * 10 + (c - '0');
          fracDigits++;
        }
      } else if (c == '.' && !dot) {
        dot = true;
      } else if (c == '-' && i == off) {
        negative = true;
      } else {
        // An exponent or anything unusual: the slow, exact way.
        return new BigDecimal(new String(text, off, len)).movePointRight(3).longValue();
      }
    }
    while (fracDigits < 3) {
      frac *= 10;
      fracDigits++;
    }
    long ns = whole * 1000 + frac;
    return negative ? -ns : ns;
  }

  /** The nanoseconds that the microseconds in {@code text} say. */
  static long nanos(String text) {
    return nanos(text.toCharArray(), 0, text.length());
  }
}
