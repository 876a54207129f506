/**
 * Reports on disk, written atomically and reloaded at start so they survive a restart: summaries in memory (and in an
 * index beside the reports), whole reports read from their files when asked for. It depends only on the report
 * model, never on the registry, watchdog or transport.
 */
package dev.frdiag.daemon.store;
