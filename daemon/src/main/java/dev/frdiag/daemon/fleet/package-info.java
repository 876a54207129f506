/**
 * Cross-job memory of the fleet: which hosts, GPUs, NICs, ports and links keep showing up in hangs, read from the
 * stored reports and scored so that one bad job does not make a bad node (distinct jobs count, not reports) and old
 * incidents fade (a half-life). Keeps per-part tallies, never the reports themselves; no I/O, no clock of its own.
 */
package dev.frdiag.daemon.fleet;
