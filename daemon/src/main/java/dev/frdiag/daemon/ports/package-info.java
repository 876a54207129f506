/**
 * The daemon's ports as a network sees them: how many connections each client address may hold
 * ({@link dev.frdiag.daemon.ports.ConnectionGate}), the gRPC port's listening channel that enforces it, and the HTTP
 * server behind the metrics port and the web view ({@link dev.frdiag.daemon.ports.HttpPort}), which a slow or idle
 * client cannot hold. Knows nothing of jobs or reports.
 */
package dev.frdiag.daemon.ports;
