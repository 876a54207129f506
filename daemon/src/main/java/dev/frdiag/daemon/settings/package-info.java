/**
 * What an operator sets: the daemon's settings ({@link dev.frdiag.daemon.settings.DaemonSettings}) and the bounds on
 * what clients can make it hold ({@link dev.frdiag.daemon.settings.Limits}). Read by every part of the daemon and by
 * the root package that wires them, so it depends on none of them but the types its values are made of.
 */
package dev.frdiag.daemon.settings;
