package dev.frdiag.readers.ib;

import java.util.Objects;

/**
 * One conclusion about one port over a window, with the numbers behind it.
 *
 * @param kind what the counters say
 * @param port the port
 * @param counter the counter (or {@code state}) the finding rests on; empty for a port that appeared or vanished
 * @param before its value in the first snapshot
 * @param after its value in the second snapshot
 * @param delta the movement
 * @param atLeast true when {@code delta} is a lower bound (saturated or reset counter)
 * @param message one sentence naming device, port and numbers
 */
public record IbFinding(IbFindingKind kind, IbPortId port, String counter, long before, long after, long delta,
    boolean atLeast, String message) {
  public IbFinding {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(port, "port");
    Objects.requireNonNull(counter, "counter");
    Objects.requireNonNull(message, "message");
  }

  @Override
  public String toString() {
    return kind + " " + message;
  }
}
