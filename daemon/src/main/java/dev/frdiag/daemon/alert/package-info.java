/** Telling people about reports as they are written: JSON webhooks, Alertmanager and Slack. */
package dev.frdiag.daemon.alert;
