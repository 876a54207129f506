/**
 * Hand-written stand-ins for the daemon, for tests of what talks to it. They speak only the wire contract and must
 * not depend on the daemon's implementation.
 */
package dev.frdiag.testing.fakes;
