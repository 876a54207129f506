/**
 * How often answers of each confidence were right, as the calibration tables of docs/DIAGNOSIS.md §9 count them: one
 * table for the real-PyTorch suite and one for the log corpus, counted the same way.
 */
package dev.frdiag.testing.calibration;
