package dev.frdiag.daemon.fleet;

import java.time.Duration;
import java.util.Objects;

/**
 * How fleet memory scores and bounds what it keeps. Build with {@link #builder()}.
 *
 * @param halfLife how long until an incident weighs half (default 14 days)
 * @param alertScore the score at which a part is alerted on (default 2.1: hangs of three different jobs within the
 *     last week always reach it, two jobs never do)
 * @param jobsPerPart jobs kept by name per part (default 16); older ones are folded into one anonymous score
 * @param maxParts parts kept at once (default 100,000); the one touched longest ago is forgotten first
 */
public record FleetSettings(Duration halfLife, double alertScore, int jobsPerPart, int maxParts) {
  public static final Duration DEFAULT_HALF_LIFE = Duration.ofDays(14);
  public static final double DEFAULT_ALERT_SCORE = 2.1;
  public static final int DEFAULT_JOBS_PER_PART = 16;
  public static final int DEFAULT_MAX_PARTS = 100_000;

  public FleetSettings {
    Objects.requireNonNull(halfLife, "halfLife");
    if (halfLife.isNegative() || halfLife.isZero()) {
      throw new IllegalArgumentException("the fleet half-life must be positive, got " + halfLife);
    }
    if (!(alertScore > 0) || Double.isInfinite(alertScore)) {
      throw new IllegalArgumentException("the fleet alert score must be a positive number, got " + alertScore);
    }
    if (jobsPerPart < 1) {
      throw new IllegalArgumentException("jobsPerPart must be at least 1, got " + jobsPerPart);
    }
    if (maxParts < 1) {
      throw new IllegalArgumentException("maxParts must be at least 1, got " + maxParts);
    }
  }

  /** The documented defaults. */
  public static FleetSettings defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder for {@link FleetSettings}, starting from the defaults. */
  public static final class Builder {
    private Duration halfLife = DEFAULT_HALF_LIFE;
    private double alertScore = DEFAULT_ALERT_SCORE;
    private int jobsPerPart = DEFAULT_JOBS_PER_PART;
    private int maxParts = DEFAULT_MAX_PARTS;

    public Builder halfLife(Duration v) {
      halfLife = v;
      return this;
    }

    public Builder alertScore(double v) {
      alertScore = v;
      return this;
    }

    public Builder jobsPerPart(int v) {
      jobsPerPart = v;
      return this;
    }

    public Builder maxParts(int v) {
      maxParts = v;
      return this;
    }

    public FleetSettings build() {
      return new FleetSettings(halfLife, alertScore, jobsPerPart, maxParts);
    }
  }
}
