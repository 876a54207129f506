/**
 * The embeddable frdiag daemon ({@link dev.frdiag.daemon.Daemon}) and the {@code fr-daemon} command that runs it.
 * It wires the transport, registry, watchdog and store together from the operator's settings (in
 * {@code settings}, which the parts read without reaching back here); nothing in {@code proto}, {@code analysis}
 * or the collector client may depend on it.
 */
package dev.frdiag.daemon;
