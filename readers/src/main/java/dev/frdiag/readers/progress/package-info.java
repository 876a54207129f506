/**
 * Reads whether training went on: the step counters training scripts and their progress bars print (torchtitan's
 * {@code step: 800}, Megatron's {@code iteration 120/ 1000}, tqdm's {@code 24/1752 [01:08<…]}). Depends on the JDK
 * only.
 */
package dev.frdiag.readers.progress;
