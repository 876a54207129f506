/**
 * Reads the output of NVIDIA's nccl-tests benchmarks ({@code all_reduce_perf} and its siblings): which ranks ran
 * where, how far the size sweep got, and whether every result was right. Depends on the JDK only.
 */
package dev.frdiag.readers.nccltests;
