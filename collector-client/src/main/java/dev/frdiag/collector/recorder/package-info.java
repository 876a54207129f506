/**
 * The flight recorder a training process embeds: records every collective and P2P op with PyTorch's sequence
 * numbering, without locks or allocation on the training thread. It knows only the ring and the contract, never
 * the daemon.
 */
package dev.frdiag.collector.recorder;
