/**
 * The postmortem report a diagnosis becomes, and its forms: the {@code frdiag.report/v1} JSON, which is a public
 * contract whose fields are only ever added, plain text, Markdown and a self-contained HTML page with its pictures.
 * Every report's timeline, the daemon's and {@code fr-diagnose analyze}'s, is built by
 * {@link dev.frdiag.report.Timeline}. Reads the analysis' result and never feeds it: the engine does not know how
 * it is shown. It must not depend on the daemon, the CLI or gRPC services.
 */
package dev.frdiag.report;
