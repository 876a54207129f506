package dev.frdiag.daemon.analysis;

/** Whether a rank's process was there when the evidence was gathered. */
public enum Liveness {
  /** Connected, heartbeating. */
  ALIVE,
  /** Its stream ended without a Goodbye or its heartbeats stopped: the process or host is gone. */
  LOST,
  /** It said Goodbye: it ended on purpose. */
  FINISHED,
  /** Nothing is known (offline evidence without liveness information). */
  UNKNOWN
}
