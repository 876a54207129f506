/**
 * fr-demo: an embedded daemon, simulated ranks on loopback, an injected hang and the diagnosis the daemon writes.
 * Built on the testing module's simulator, so it is never part of the distribution.
 */
package dev.frdiag.demo;
