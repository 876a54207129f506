package dev.frdiag.analysis;

import dev.frdiag.proto.v1.Symptom;

/** Causes a root operation can have, in the order one is preferred as the verdict. */
enum Cause {
  MISMATCH(Symptom.MISMATCH),
  DEAD(Symptom.DEAD_RANK),
  DEVICE_ERROR(Symptom.GPU_STALL),
  CPU(Symptom.CPU_STALL),
  /**
   * No evidence from a member its peers wait on in a collective whose connections to it are open: alive, and stuck
   * where it could not answer (a native call holding Python's lock, a wedged process).
   */
  WEDGED(Symptom.CPU_STALL),
  GPU(Symptom.GPU_STALL),
  /** No usable evidence from a member (no dump, an unreadable one): likely gone, but weaker than proof. */
  NO_EVIDENCE(Symptom.DEAD_RANK),
  WATCHDOG(Symptom.WATCHDOG_STUCK),
  FABRIC(Symptom.FABRIC);

  final Symptom symptom;

  Cause(Symptom symptom) {
    this.symptom = symptom;
  }
}
