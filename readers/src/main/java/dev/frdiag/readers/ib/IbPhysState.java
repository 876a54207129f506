package dev.frdiag.readers.ib;

/** The physical port state of {@code ports/N/phys_state} ({@code 5: LinkUp}). */
public enum IbPhysState {
  /** The file was missing, unreadable, or held an unknown value. */
  UNKNOWN,
  SLEEP,
  POLLING,
  DISABLED,
  PORT_CONFIGURATION_TRAINING,
  LINK_UP,
  LINK_ERROR_RECOVERY,
  PHY_TEST;

  /** Reads {@code "5: LinkUp"} by its number; UNKNOWN for anything else. */
  static IbPhysState parse(String raw) {
    int code = code(raw);
    return code >= 1 && code <= 7 ? values()[code] : UNKNOWN;
  }

  /** The number before the colon of {@code "5: LinkUp"}, or -1. */
  static int code(String raw) {
    if (raw == null) {
      return -1;
    }
    int colon = raw.indexOf(':');
    String number = (colon < 0 ? raw : raw.substring(0, colon)).trim();
    if (number.isEmpty() || number.length() > 3) {
      return -1;
    }
    for (int i = 0; i < number.length(); i++) {
      if (!Character.isDigit(number.charAt(i))) {
        return -1;
      }
    }
    return Integer.parseInt(number);
  }
}
