/**
 * Turns what the NCCL and InfiniBand readers found into the node context findings of the wire contract, so the
 * agent and the CLI hand the analysis the same evidence. Depends on the readers and the contract's messages only,
 * never on the analysis or on gRPC transport.
 */
package dev.frdiag.readers.context;
