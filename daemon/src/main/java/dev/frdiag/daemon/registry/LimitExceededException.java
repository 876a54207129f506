package dev.frdiag.daemon.registry;

/** A client asked the daemon to hold more than one of its {@link dev.frdiag.daemon.settings.Limits} allows. */
public final class LimitExceededException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public LimitExceededException(String message) {
    super(message);
  }
}
