/**
 * What a person would run by hand on a hung job's node (the kernel log's Xid lines, an NCCL RAS report), run by
 * the node agent within a time limit and read into findings the diagnosis weighs.
 */
package dev.frdiag.agent.probe;
