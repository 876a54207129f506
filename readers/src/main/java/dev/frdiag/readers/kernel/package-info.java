/**
 * Reads the GPU errors the NVIDIA driver writes to the kernel log (dmesg, journal, syslog): Xid lines, each with
 * the GPU's PCI bus id, the Xid number, the process whose work it hit, and the earlier Xid a cleanup names as its
 * cause. Depends on nothing but the JDK.
 */
package dev.frdiag.readers.kernel;
