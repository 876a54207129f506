/**
 * The bounded, lock-free ring of a rank's last operations (a seqlock in struct-of-arrays form): one writer that
 * never blocks, readers that copy consistent records or learn they were overwritten.
 */
package dev.frdiag.collector.ring;
