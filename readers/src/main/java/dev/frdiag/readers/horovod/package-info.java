/**
 * Reads Horovod's stall inspector: the ops some ranks submitted and others did not, which names the ranks that
 * never issued a collective their peers wait in. Depends on the JDK only.
 */
package dev.frdiag.readers.horovod;
