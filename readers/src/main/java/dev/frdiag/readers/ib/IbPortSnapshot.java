package dev.frdiag.readers.ib;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * What one port's sysfs directory held at one moment.
 *
 * @param id the port
 * @param state {@code state} as read ({@code 4: ACTIVE}), empty when missing or unreadable
 * @param physState {@code phys_state} as read ({@code 5: LinkUp}), empty when missing or unreadable
 * @param rate {@code rate} as read ({@code 100 Gb/sec (4X EDR)}), empty when missing or unreadable
 * @param linkLayer {@code link_layer} ({@code InfiniBand}, or {@code Ethernet} for RoCE), empty when missing
 * @param counters {@code counters/*} that held a number, by file name
 * @param hwCounters {@code hw_counters/*} that held a number, by file name
 * @param hwCountersPresent false when the port has no {@code hw_counters} directory
 * @param notes what could not be read and why ({@code counters/port_xmit_wait: N/A (no PMA)})
 */
public record IbPortSnapshot(IbPortId id, String state, String physState, String rate, String linkLayer,
    Map<String, Long> counters, Map<String, Long> hwCounters, boolean hwCountersPresent, List<String> notes) {
  public IbPortSnapshot {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(physState, "physState");
    Objects.requireNonNull(rate, "rate");
    Objects.requireNonNull(linkLayer, "linkLayer");
    counters = Collections.unmodifiableMap(new TreeMap<>(counters));
    hwCounters = Collections.unmodifiableMap(new TreeMap<>(hwCounters));
    notes = List.copyOf(notes);
  }

  /** The logical state. */
  public IbPortState portState() {
    return IbPortState.parse(state);
  }

  /** The physical state. */
  public IbPhysState physicalState() {
    return IbPhysState.parse(physState);
  }

  /** True when the port is ACTIVE and its link is up (or the phys_state could not be read). */
  public boolean up() {
    IbPhysState phys = physicalState();
    return portState() == IbPortState.ACTIVE && (phys == IbPhysState.LINK_UP || phys == IbPhysState.UNKNOWN);
  }

  /** A {@code counters/} value. */
  public OptionalLong counter(String name) {
    Long v = counters.get(name);
    return v == null ? OptionalLong.empty() : OptionalLong.of(v);
  }

  /** A {@code hw_counters/} value. */
  OptionalLong hwCounter(String name) {
    Long v = hwCounters.get(name);
    return v == null ? OptionalLong.empty() : OptionalLong.of(v);
  }
}
