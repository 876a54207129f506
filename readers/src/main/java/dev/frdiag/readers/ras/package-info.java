/**
 * Reads the text status reports of NCCL's RAS subsystem (NCCL 2.24+, the {@code ncclras} client or {@code nc
 * localhost 28028}): the job summary, the communicators with their status and errors, the processes RAS could not
 * reach or considers dead, and the ranks whose counts of launched collectives differ. Depends on nothing but the
 * JDK.
 */
package dev.frdiag.readers.ras;
