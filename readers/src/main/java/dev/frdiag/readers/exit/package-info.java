/**
 * Reads what launchers and the kernel say about processes of a job that ended: torchrun's (torch elastic's)
 * failure reports, Ray's dead-worker reports, and the kernel's OOM killer. Depends on the JDK and the kernel-log
 * reader's syslog prefix only.
 */
package dev.frdiag.readers.exit;
