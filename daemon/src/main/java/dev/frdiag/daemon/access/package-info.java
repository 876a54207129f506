/** Who may speak to the daemon and what each may do: TLS, tokens, certificates and per-job roles. */
package dev.frdiag.daemon.access;
