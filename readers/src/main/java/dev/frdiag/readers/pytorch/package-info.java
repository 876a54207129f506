/**
 * Readers of what PyTorch leaves behind: Flight Recorder dumps (the pickle and its JSON variant, checked opcode
 * by opcode and never instantiated) and ProcessGroupNCCL watchdog lines, translated to the wire contract. It
 * depends only on {@code proto} and must not depend on the analysis, the daemon, the CLI or the other readers.
 */
package dev.frdiag.readers.pytorch;
