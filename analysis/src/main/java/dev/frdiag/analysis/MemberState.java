package dev.frdiag.analysis;

/** Where one member is relative to one stuck operation. */
enum MemberState {
  /** Its device completed it. */
  DONE,
  /** Its device started it and waits for the peers. */
  WAITING,
  /** It issued it, but its device never started it (or starts are not recorded). */
  ISSUED,
  /** It never issued it. */
  NOT_ISSUED,
  /** Nothing usable is known (lost, or no snapshot). */
  UNKNOWN
}
