package dev.frdiag.analysis;

/** Whether a rank's process was there when the evidence was gathered. */
public enum Liveness {
  /** Connected, heartbeating. */
  ALIVE,
  /** Its stream ended without a Goodbye or its heartbeats stopped: the process or host is gone. */
  LOST,
  /**
   * Asked for a snapshot, it (or the agent speaking for it) answered that it could not produce one: the process is
   * gone or wedged, though its stream may still be open.
   */
  UNRESPONSIVE,
  /** It said Goodbye: it ended on purpose. */
  FINISHED,
  /** Nothing is known (offline evidence without liveness information). */
  UNKNOWN
}
