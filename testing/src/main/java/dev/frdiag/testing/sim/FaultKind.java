package dev.frdiag.testing.sim;

/** The kinds of fault the simulator can inject (hangs, and one straggler); see {@link Fault} for what each does. */
public enum FaultKind {
  /** No fault: the job trains until stopped. */
  NONE,
  /** The rank's CPU wedges: it issues nothing from the step on (e.g. stuck in the data loader or a deadlock). */
  CPU_STALL,
  /** The rank's GPU wedges: it keeps issuing the step's ops, but its device starts none of them. */
  GPU_STALL,
  /** The network fails under the step's world all_reduce: every rank starts it, none completes it. */
  FABRIC,
  /** The rank issues the step's data-parallel all_reduce with a different size; the group hangs in it. */
  MISMATCH,
  /** The rank's process dies at the start of the step: its stream to the daemon ends without a Goodbye. */
  DEAD_RANK,
  /** Not a hang: from the step on, the rank issues each step a delay after it could (a straggler). */
  SLOW
}
