package dev.frdiag.agent;

import java.time.Duration;
import java.util.Locale;
import picocli.CommandLine;

/** Parses the durations of the agent's options: "500ms", "30s", "2m", "1h" or ISO-8601 ("PT30S"), above zero. */
final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
  @Override
  public Duration convert(String value) {
    // Locale.ROOT: the units are ASCII whatever language the node runs in.
    String v = value.trim().toLowerCase(Locale.ROOT);
    Duration d;
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
          default -> throw new IllegalArgumentException();
        };
      }
    } catch (RuntimeException e) {
      throw new CommandLine.TypeConversionException("'" + value + "' is not a duration: use e.g. 500ms, 30s, 2m");
    }
    if (d.isNegative() || d.isZero()) {
      throw new CommandLine.TypeConversionException("'" + value + "' is not above zero");
    }
    return d;
  }
}
