package dev.frdiag.agent.controlplane;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;

/** A request to a rank's worker server that got no usable answer; the message names the socket. */
public final class ControlPlaneException extends IOException {
  private static final long serialVersionUID = 1L;

  /** Why there was no answer, coarse enough for the caller to choose what to do next. */
  public enum Reason {
    /** No socket file: the rank does not serve one (not enabled, not started yet, or cleaned up). */
    NO_SOCKET,
    /** The file is there but nothing accepts on it: a rank that died leaves its socket file behind. */
    REFUSED,
    /** Connected, but the answer did not come in time. */
    TIMEOUT,
    /** An answer that is not HTTP/1.1 as expected, or larger than allowed. */
    BAD_ANSWER,
    /** A well-formed HTTP answer whose status is not 200. */
    HTTP_STATUS,
    /** Any other I/O failure. */
    IO
  }

  private final transient Path socket;
  private final Reason reason;

  ControlPlaneException(Path socket, Reason reason, String message, Throwable cause) {
    super(message, cause);
    this.socket = Objects.requireNonNull(socket, "socket");
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  ControlPlaneException(Path socket, Reason reason, String message) {
    this(socket, reason, message, null);
  }

  public Path socket() {
    return socket;
  }

  public Reason reason() {
    return reason;
  }
}
