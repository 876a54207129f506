package dev.frdiag.daemon.settings;

import java.time.Duration;

/**
 * How long and how many connections every port of the daemon (gRPC, metrics, web view) grants its clients, so that
 * a few slow or idle ones cannot hold a port that everyone else needs. Build with {@link #builder()}.
 *
 * @param headerTimeout how long a new connection has to finish its TLS handshake and send a whole request head (on
 *     gRPC, its HTTP/2 preface); a client slower than this is cut off (default 10 s)
 * @param idleTimeout how long a connection may stay open with no request in progress (default 60 s)
 * @param maxPerClient connections one client address may hold open on one port; more are closed as they come
 *     (default 64)
 * @param maxPerHttpPort connections the metrics port and the web view each hold at once (default 4,096); the gRPC
 *     port has no such bound, its ranks being as many as the jobs' ranks
 */
public record Connections(Duration headerTimeout, Duration idleTimeout, int maxPerClient, int maxPerHttpPort) {
  public static final Duration DEFAULT_HEADER_TIMEOUT = Duration.ofSeconds(10);
  public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);
  public static final int DEFAULT_MAX_PER_CLIENT = 64;
  public static final int DEFAULT_MAX_PER_HTTP_PORT = 4096;

  public Connections {
    Limits.positive(headerTimeout, "headerTimeout");
    Limits.positive(idleTimeout, "idleTimeout");
    if (maxPerClient < 1) {
      throw new IllegalArgumentException("maxPerClient must be at least 1, got " + maxPerClient);
    }
    if (maxPerHttpPort < maxPerClient) {
      throw new IllegalArgumentException("maxPerHttpPort must be at least maxPerClient (" + maxPerClient + "), got "
          + maxPerHttpPort);
    }
  }

  /** The documented defaults. */
  public static Connections defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder for {@link Connections}, starting from the documented defaults. */
  public static final class Builder {
    private Duration headerTimeout = DEFAULT_HEADER_TIMEOUT;
    private Duration idleTimeout = DEFAULT_IDLE_TIMEOUT;
    private int maxPerClient = DEFAULT_MAX_PER_CLIENT;
    private int maxPerHttpPort = DEFAULT_MAX_PER_HTTP_PORT;

    public Builder headerTimeout(Duration v) {
      headerTimeout = v;
      return this;
    }

    public Builder idleTimeout(Duration v) {
      idleTimeout = v;
      return this;
    }

    public Builder maxPerClient(int v) {
      maxPerClient = v;
      return this;
    }

    public Builder maxPerHttpPort(int v) {
      maxPerHttpPort = v;
      return this;
    }

    public Connections build() {
      return new Connections(headerTimeout, idleTimeout, maxPerClient, maxPerHttpPort);
    }
  }
}
