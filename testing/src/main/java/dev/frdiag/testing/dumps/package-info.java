/**
 * Writes Flight Recorder dumps the way PyTorch does (pickle or JSON), and generates the dumps a hung job leaves
 * behind from a simulated run ({@link dev.frdiag.testing.dumps.FaultyDumps}). Test-only; it must not depend on the
 * daemon or the analysis, whose inputs it produces.
 */
package dev.frdiag.testing.dumps;
