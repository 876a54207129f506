/** What the daemon counts for operators, and the Prometheus endpoint that serves it. */
package dev.frdiag.daemon.metrics;
