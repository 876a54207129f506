/**
 * Reads NCCL_DEBUG logs, streaming and with bounded memory, into an {@link dev.frdiag.readers.nccl.NcclLog}: who
 * ran where, the communicators and their ranks, the topology NCCL built, each rank's last collective and the
 * WARN lines that explain a failure. Depends on nothing but the JDK: no analysis, no gRPC, no other reader.
 */
package dev.frdiag.readers.nccl;
