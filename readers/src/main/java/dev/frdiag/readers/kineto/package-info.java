/**
 * Reader of PyTorch profiler traces (Kineto's Chrome-trace JSON, {@code .json} or {@code .json.gz}, one rank per file
 * or several merged): the collectives each rank ran, with when its CPU issued them and when its device (or gloo's
 * worker thread) ran them, and the busy intervals of its device. Streams each file once and never holds it whole.
 * Depends only on Jackson's streaming parser; knows nothing of the analysis.
 */
package dev.frdiag.readers.kineto;
