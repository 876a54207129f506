package dev.frdiag.readers.ib;

import java.nio.file.Path;
import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Every RDMA port's state and counters at one moment.
 *
 * @param takenAt when the reading started
 * @param root the directory read ({@code /sys/class/infiniband})
 * @param ports every port found, by id
 * @param notes what could not be read above the port level (a missing root, an unreadable device)
 */
public record IbSnapshot(Instant takenAt, Path root, SortedMap<IbPortId, IbPortSnapshot> ports, List<String> notes) {
  public IbSnapshot {
    Objects.requireNonNull(takenAt, "takenAt");
    Objects.requireNonNull(root, "root");
    ports = Collections.unmodifiableSortedMap(new TreeMap<>(ports));
    notes = List.copyOf(notes);
  }
}
