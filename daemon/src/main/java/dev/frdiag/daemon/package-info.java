/**
 * The embeddable frdiag daemon ({@link dev.frdiag.daemon.Daemon}), its settings and the {@code fr-daemon} command
 * that runs it. It wires the transport, registry, watchdog and store together; nothing in {@code proto},
 * {@code analysis} or the collector client may depend on it.
 */
package dev.frdiag.daemon;
