/**
 * The hang analysis: from every rank's evidence ({@link dev.frdiag.analysis.JobEvidence}), which rank diverged, on
 * which collective, and why ({@link dev.frdiag.analysis.Diagnosis}), through the facade
 * {@link dev.frdiag.analysis.HangAnalyzer}. A pure function of its input: it must not depend on gRPC services,
 * the daemon, readers of files, I/O or a clock; only on the {@code dev.frdiag.proto} messages.
 */
package dev.frdiag.analysis;
