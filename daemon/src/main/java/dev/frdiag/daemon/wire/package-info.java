/**
 * The gRPC services ranks, node agents and users talk to: thin adapters that validate each message, translate it and
 * delegate to the registry, watchdog and store. The only package of the daemon that knows gRPC; the others must not
 * depend on it.
 */
package dev.frdiag.daemon.wire;
