/**
 * The node agent ({@code fr-agent}): serves the unmodified PyTorch ranks of one node to the daemon from their
 * Flight Recorder dumps, debug pipes, training logs, NCCL logs and the node's InfiniBand counters. It speaks to
 * the daemon only through the wire contract and must not depend on the daemon, the analysis or the CLI.
 */
package dev.frdiag.agent;
