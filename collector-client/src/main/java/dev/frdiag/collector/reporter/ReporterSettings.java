package dev.frdiag.collector.reporter;

import java.time.Duration;

/**
 * How a {@link Reporter} talks to the daemon. Build with {@link #builder()}; every value is validated.
 *
 * @param heartbeatInterval how often progress is sent (default 1 s)
 * @param maxBatchRecords records per RecordBatch at most (default 128: batches of 64-256 were 10-40x faster
 *     than one record per message on loopback)
 * @param maxBatchDelay longest a new record waits before it is shipped (default 100 ms)
 * @param helloTimeout how long to wait for the daemon's Welcome before reconnecting (default 5 s)
 * @param initialBackoff first reconnect delay (default 200 ms), doubled per failure up to maxBackoff (10 s)
 * @param shutdownTimeout how long close() may spend flushing (default 2 s)
 * @param maxQueuedEvents events kept while they cannot be sent (default 256); more are dropped and counted
 */
public record ReporterSettings(Duration heartbeatInterval, int maxBatchRecords, Duration maxBatchDelay,
    Duration helloTimeout, Duration initialBackoff, Duration maxBackoff, Duration shutdownTimeout,
    int maxQueuedEvents) {

  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(1);
  public static final int DEFAULT_MAX_BATCH_RECORDS = 128;
  public static final Duration DEFAULT_MAX_BATCH_DELAY = Duration.ofMillis(100);
  public static final Duration DEFAULT_HELLO_TIMEOUT = Duration.ofSeconds(5);
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofMillis(200);
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(10);
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(2);
  public static final int DEFAULT_MAX_QUEUED_EVENTS = 256;

  public ReporterSettings {
    Reporter.positive(heartbeatInterval, "heartbeatInterval");
    Reporter.positive(maxBatchDelay, "maxBatchDelay");
    Reporter.positive(helloTimeout, "helloTimeout");
    Reporter.positive(initialBackoff, "initialBackoff");
    Reporter.positive(maxBackoff, "maxBackoff");
    Reporter.positive(shutdownTimeout, "shutdownTimeout");
    if (maxBatchRecords < 1) {
      throw new IllegalArgumentException("maxBatchRecords must be at least 1, got " + maxBatchRecords);
    }
    if (maxQueuedEvents < 1) {
      throw new IllegalArgumentException("maxQueuedEvents must be at least 1, got " + maxQueuedEvents);
    }
    if (maxBackoff.compareTo(initialBackoff) < 0) {
      throw new IllegalArgumentException("maxBackoff " + maxBackoff + " is below initialBackoff " + initialBackoff);
    }
  }

  public static ReporterSettings defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder for {@link ReporterSettings}, starting from the documented defaults. */
  public static final class Builder {
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
    private int maxBatchRecords = DEFAULT_MAX_BATCH_RECORDS;
    private Duration maxBatchDelay = DEFAULT_MAX_BATCH_DELAY;
    private Duration helloTimeout = DEFAULT_HELLO_TIMEOUT;
    private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
    private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private int maxQueuedEvents = DEFAULT_MAX_QUEUED_EVENTS;

    public Builder heartbeatInterval(Duration d) {
      heartbeatInterval = d;
      return this;
    }

    public Builder maxBatchRecords(int n) {
      maxBatchRecords = n;
      return this;
    }

    public Builder maxBatchDelay(Duration d) {
      maxBatchDelay = d;
      return this;
    }

    public Builder helloTimeout(Duration d) {
      helloTimeout = d;
      return this;
    }

    public Builder backoff(Duration initial, Duration max) {
      initialBackoff = initial;
      maxBackoff = max;
      return this;
    }

    public Builder shutdownTimeout(Duration d) {
      shutdownTimeout = d;
      return this;
    }

    public Builder maxQueuedEvents(int n) {
      maxQueuedEvents = n;
      return this;
    }

    public ReporterSettings build() {
      return new ReporterSettings(heartbeatInterval, maxBatchRecords, maxBatchDelay, helloTimeout, initialBackoff,
          maxBackoff, shutdownTimeout, maxQueuedEvents);
    }
  }
}
