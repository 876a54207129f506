/**
 * Turns what the readers found (NCCL logs, InfiniBand counters, the driver's Xid lines, processes that died, NCCL
 * RAS reports) into the node context findings of the wire contract, so the agent and the CLI hand the analysis the
 * same evidence; {@link dev.frdiag.readers.context.NodeLogs} reads a file's kernel, launcher and RAS lines in one
 * pass. Depends on the readers and the contract's messages only, never on the analysis or on gRPC transport.
 */
package dev.frdiag.readers.context;
