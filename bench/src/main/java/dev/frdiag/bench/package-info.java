/**
 * Benchmarks of the recorder, the analysis, incident latency, the NCCL log parser and fr-diagnose analyze: JMH
 * and figure-printing mains run by hand (see docs/PERFORMANCE.md), never by the test suite.
 */
package dev.frdiag.bench;
