/**
 * A deterministic simulator of a distributed training job's ranks: each records its collectives into a collector
 * {@code FlightRecorder} and may stream them through a {@code Reporter}, while an injected fault makes the job hang
 * as real jobs do. Test-only; it produces what the daemon and the analysis consume, so it must not depend on them.
 */
package dev.frdiag.testing.sim;
