/**
 * fr-diagnose: reads reports from a daemon over the contract, and hosts the offline commands. The only place
 * where frdiag writes to a terminal; it never depends on the daemon's code.
 */
package dev.frdiag.cli;
