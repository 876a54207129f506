package dev.frdiag.proto;

/** Sizes the wire contract states (collector.proto), shared by the daemon and whatever relays to it. */
public final class MessageLimits {
  /** Largest rank message the daemon takes by default; a larger one ends that rank's stream (RESOURCE_EXHAUSTED). */
  public static final int DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

  private MessageLimits() {}
}
