package dev.frdiag.readers.ib;

/** The logical port state of {@code ports/N/state} ({@code 4: ACTIVE}). */
public enum IbPortState {
  /** The file was missing, unreadable, or held an unknown value. */
  UNKNOWN,
  DOWN,
  INIT,
  ARMED,
  ACTIVE,
  ACTIVE_DEFER;

  /** Reads {@code "4: ACTIVE"} by its number; UNKNOWN for anything else. */
  static IbPortState parse(String raw) {
    switch (IbPhysState.code(raw)) {
      case 1: return DOWN;
      case 2: return INIT;
      case 3: return ARMED;
      case 4: return ACTIVE;
      case 5: return ACTIVE_DEFER;
      default: return UNKNOWN;
    }
  }
}
