package dev.frdiag.daemon.store;

import java.time.Duration;
import java.util.Objects;

/**
 * Which reports the store keeps: at most {@code perJob} per job (0: no limit) and none older than {@code maxAge}
 * (zero: no limit). A job's newest report is always kept.
 */
public record Retention(int perJob, Duration maxAge) {
  /** Everything, forever: reports are small (tens of KB) and an incident's history is what they are for. */
  public static final Retention KEEP_ALL = new Retention(0, Duration.ZERO);

  public Retention {
    Objects.requireNonNull(maxAge, "maxAge");
    if (perJob < 0) {
      throw new IllegalArgumentException("reports kept per job must not be negative, got " + perJob);
    }
    if (maxAge.isNegative()) {
      throw new IllegalArgumentException("report retention must not be negative, got " + maxAge);
    }
  }
}
