/**
 * What the daemon knows about each job and its ranks: liveness, progress, ring windows and when an incident is due.
 * It must not depend on the transport ({@code wire}), the watchdog or the store; callers pass the time in.
 */
package dev.frdiag.daemon.registry;
