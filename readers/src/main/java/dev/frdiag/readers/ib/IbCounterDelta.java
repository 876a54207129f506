package dev.frdiag.readers.ib;

import java.util.Map;
import java.util.Objects;

/**
 * How one counter of one port moved between two snapshots.
 *
 * <p>PMA error counters are 4 to 16 bits wide and <em>saturate</em> at all-ones instead of wrapping; a counter at
 * its maximum can have moved by any amount, so the delta is a lower bound ({@link #atLeast()}). A counter that
 * went down was reset (by {@code perfquery -R} or a driver restart); its delta is at least the new value.
 *
 * @param counter the file name, e.g. {@code symbol_error}
 * @param hw true for {@code hw_counters/}, false for {@code counters/}
 * @param before the value in the first snapshot
 * @param after the value in the second snapshot
 * @param delta the movement, exact or a lower bound
 * @param change what kind of movement
 */
public record IbCounterDelta(String counter, boolean hw, long before, long after, long delta, Change change) {

  /** How a counter moved. */
  public enum Change {
    /** {@code after - before}, exactly. */
    EXACT,
    /** The counter reached its all-ones maximum in the window: moved at least {@code after - before}. */
    SATURATED,
    /** The counter sat at its maximum in both snapshots: it cannot show whether it moved. */
    STUCK_SATURATED,
    /** The counter went down: it was reset, and moved at least {@code after} since. */
    RESET
  }

  /**
   * Counter widths in bits (kernel {@code drivers/infiniband/core/sysfs.c}, PortCounters attribute). Counters not
   * listed are read from the 64-bit extended attribute and treated as never saturating.
   */
  static final Map<String, Integer> WIDTHS = Map.ofEntries(
      Map.entry("symbol_error", 16),
      Map.entry("link_error_recovery", 8),
      Map.entry("link_downed", 8),
      Map.entry("port_rcv_errors", 16),
      Map.entry("port_rcv_remote_physical_errors", 16),
      Map.entry("port_rcv_switch_relay_errors", 16),
      Map.entry("port_xmit_discards", 16),
      Map.entry("port_xmit_constraint_errors", 8),
      Map.entry("port_rcv_constraint_errors", 8),
      Map.entry("local_link_integrity_errors", 4),
      Map.entry("excessive_buffer_overrun_errors", 4),
      Map.entry("VL15_dropped", 16),
      Map.entry("port_xmit_wait", 32));

  public IbCounterDelta {
    Objects.requireNonNull(counter, "counter");
    Objects.requireNonNull(change, "change");
  }

  /** Computes the movement of {@code counter} from {@code before} to {@code after}. */
  static IbCounterDelta of(String counter, boolean hw, long before, long after) {
    Integer width = hw ? null : WIDTHS.get(counter);
    long max = width == null ? -1 : (1L << width) - 1;
    if (after < before) {
      return new IbCounterDelta(counter, hw, before, after, after, Change.RESET);
    }
    if (max > 0 && after == max) {
      return before == max ? new IbCounterDelta(counter, hw, before, after, 0, Change.STUCK_SATURATED)
          : new IbCounterDelta(counter, hw, before, after, after - before, Change.SATURATED);
    }
    return new IbCounterDelta(counter, hw, before, after, after - before, Change.EXACT);
  }

  /** True when {@link #delta()} is a lower bound, not an exact count. */
  boolean atLeast() {
    return change != Change.EXACT;
  }

  /** The counter's width in bits, or 64 when not a saturating PMA counter. */
  int widthBits() {
    return hw ? 64 : WIDTHS.getOrDefault(counter, 64);
  }

  /** {@code symbol_error 12 -> 65535 (>=65523, saturated at 16 bits)}. */
  String describe() {
    String name = (hw ? "hw_counters/" : "") + counter;
    switch (change) {
      case SATURATED:
        return name + " " + before + " -> " + after + " (>=" + delta + ", saturated at " + widthBits() + " bits)";
      case STUCK_SATURATED:
        return name + " " + before + " -> " + after + " (saturated at " + widthBits()
            + " bits before the window: movement unknown)";
      case RESET:
        return name + " " + before + " -> " + after + " (reset; >=" + delta + " since)";
      default:
        return name + " " + before + " -> " + after + " (+" + delta + ")";
    }
  }
}
