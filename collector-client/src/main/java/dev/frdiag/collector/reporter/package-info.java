/**
 * Streams a rank's recorder to the daemon over a gRPC Channel the caller supplies: heartbeats, record deltas,
 * events and dump replies, with reconnect and bounded memory while the daemon is away. Recording threads never
 * touch it.
 */
package dev.frdiag.collector.reporter;
