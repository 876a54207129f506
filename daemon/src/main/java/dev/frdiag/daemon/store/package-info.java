/**
 * Reports on disk, written atomically and reloaded at start so they survive a restart. It depends only on the report
 * model, never on the registry, watchdog or transport.
 */
package dev.frdiag.daemon.store;
