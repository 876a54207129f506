/**
 * Finds the PyTorch ranks running on this node, and the scheduler job they belong to, from the process table
 * ({@code /proc}), so the node agent follows them without a hand-written rank list.
 */
package dev.frdiag.agent.discovery;
