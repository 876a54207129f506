/**
 * PyTorch's worker control plane as the node agent uses it: a small HTTP/1.1 client over Unix domain sockets and
 * the Flight Recorder handlers of a rank's worker server.
 */
package dev.frdiag.agent.controlplane;
