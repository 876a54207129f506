/**
 * Notices hangs (stalls, lost ranks, rank-reported errors), gathers every rank's snapshot and turns it into a stored
 * report. It reads the registry and writes the store, and must not depend on the transport ({@code wire}).
 */
package dev.frdiag.daemon.watchdog;
