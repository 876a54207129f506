/**
 * fr-diagnose analyze: turns what a job left behind (Flight Recorder dumps, NCCL_DEBUG logs, training logs) into
 * the same evidence the daemon collects live, and runs the same analysis on it.
 */
package dev.frdiag.cli.analyze;
