package dev.frdiag.readers.gpu;

import java.util.List;
import java.util.Objects;

/**
 * One GPU's memory-health problems as {@code nvidia-smi -q} reports them.
 *
 * @param busId the GPU's PCI bus id as the driver's Xid lines print it ("0000:dc:00")
 * @param pids the processes listed on it (compute processes), in the order printed
 * @param problems each problem in words with the lines behind it ("Remapped Rows: Pending: Yes")
 * @param source where its section starts ("nvidia-smi:42")
 */
public record GpuHealth(String busId, List<Long> pids, List<String> problems, String source) {
  public GpuHealth {
    Objects.requireNonNull(busId, "busId");
    Objects.requireNonNull(source, "source");
    pids = List.copyOf(pids);
    problems = List.copyOf(problems);
  }
}
