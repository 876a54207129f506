package dev.frdiag.readers.nccltests;

import java.util.List;
import java.util.Objects;

/**
 * What one nccl-tests run printed.
 *
 * @param devices the {@code #  Rank  0 Group  0 Pid  N on host device  0 …} lines: one per rank of the run
 * @param hosts the hosts those lines name, in order of first appearance
 * @param sizes result rows printed (one per message size measured)
 * @param lastSize the bytes of the last result row; -1 when there is none
 * @param wrong results whose {@code #wrong} column is above 0 (validation found wrong values)
 * @param finished the run printed its closing {@code # Out of bounds values} and {@code # Avg bus bandwidth} lines
 * @param outOfBoundsOk the closing line says {@code 0 OK}
 * @param avgBusBandwidth the average bus bandwidth in GB/s the run closed with; NaN when absent
 * @param source where the run's first line is, e.g. "nccl-tests.log:3"
 */
public record NcclTestsRun(int devices, List<String> hosts, int sizes, long lastSize, int wrong, boolean finished,
    boolean outOfBoundsOk, double avgBusBandwidth, String source) {
  public NcclTestsRun {
    hosts = List.copyOf(hosts);
    Objects.requireNonNull(source, "source");
  }

  /** Every size ran to the end and every value checked was right: collectives completed, which is progress. */
  public boolean completedCleanly() {
    return finished && outOfBoundsOk && wrong == 0 && sizes > 0;
  }
}
