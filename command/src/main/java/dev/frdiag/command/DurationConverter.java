package dev.frdiag.command;

import java.time.Duration;
import java.util.Locale;
import picocli.CommandLine;

/**
 * Reads a duration option as people type it: {@code 500ms}, {@code 30s}, {@code 2m}, {@code 1h}, or ISO-8601
 * ({@code PT30S}). Every duration frdiag takes is a timeout or an interval, so zero and negative ones are refused.
 */
public final class DurationConverter implements CommandLine.ITypeConverter<Duration> {

  @Override
  public Duration convert(String value) {
    return parse(value);
  }

  /**
   * Parses {@code value}.
   *
   * @throws CommandLine.TypeConversionException naming the value, when it is no duration or not above zero
   */
  public static Duration parse(String value) {
    Duration d;
    String v = value.trim().toLowerCase(Locale.ROOT);
    try {
      if (v.startsWith("pt")) {
        d = Duration.parse(v.toUpperCase(Locale.ROOT));
      } else if (v.endsWith("ms")) {
        d = Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
      } else {
        long n = Long.parseLong(v.substring(0, v.length() - 1));
        d = switch (v.charAt(v.length() - 1)) {
          case 's' -> Duration.ofSeconds(n);
          case 'm' -> Duration.ofMinutes(n);
          case 'h' -> Duration.ofHours(n);
          case 'd' -> Duration.ofDays(n);
          default -> throw new IllegalArgumentException();
        };
      }
    } catch (RuntimeException e) {
      throw new CommandLine.TypeConversionException("'" + value + "' is not a duration: use e.g. 500ms, 30s, 2m, 1h, 30d");
    }
    if (d.isNegative() || d.isZero()) {
      throw new CommandLine.TypeConversionException("'" + value + "' is not above zero");
    }
    return d;
  }
}
