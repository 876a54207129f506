/**
 * Test helpers that follow a running daemon's incidents over the wire contract. They must not depend on the
 * daemon's classes, only on its gRPC API.
 */
package dev.frdiag.testing.incidents;
