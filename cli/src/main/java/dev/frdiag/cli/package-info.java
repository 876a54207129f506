/**
 * fr-diagnose: reads reports from a daemon over the contract, and hosts the offline commands. Option parsing and
 * printing only: {@code analyze} has what a job left behind read by {@link dev.frdiag.evidence.EvidenceReader} and
 * prints the report. The only place where frdiag writes to a terminal; it never depends on the daemon's code.
 */
package dev.frdiag.cli;
