/** What {@code nvidia-smi -q} says of each GPU's memory health: pending row remaps, retirements, uncorrectable ECC. */
package dev.frdiag.readers.gpu;
