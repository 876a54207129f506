/**
 * Reads InfiniBand port state and counters from sysfs and turns two snapshots into an
 * {@link dev.frdiag.readers.ib.IbWindow} of findings (link flaps, error counters, congestion). Depends on nothing
 * but the JDK: no analysis, no gRPC, no other reader.
 */
package dev.frdiag.readers.ib;
