package dev.frdiag.readers.nccl;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The events of one parse: every one counted per kind, the first {@code maxPerKind} of each kind kept, so a log
 * that repeats one error a million times stays small. Each event is taken from the line {@link LinePrefix} holds.
 */
final class Events {
  private final LinePrefix prefix;
  private final int maxPerKind;
  private final Map<NcclEventKind, List<NcclEvent>> kept = new EnumMap<>(NcclEventKind.class);
  private final Map<NcclEventKind, Long> counts = new EnumMap<>(NcclEventKind.class);

  Events(LinePrefix prefix, int maxPerKind) {
    this.prefix = prefix;
    this.maxPerKind = maxPerKind;
  }

  /** Counts an event of the current line, and keeps it while its kind is under the cap. */
  void add(NcclEventKind kind, FaultDomain domain, String peer, String nic, IbCompletion ib, String explanation) {
    long count = counts.merge(kind, 1L, Long::sum);
    if (count > maxPerKind) {
      return;
    }
    kept.computeIfAbsent(kind, k -> new ArrayList<>()).add(new NcclEvent(kind, domain, prefix.timestamp(),
        prefix.host(), prefix.pid(), prefix.tid(), prefix.device(), prefix.lineNumber(), prefix.quote(),
        prefix.location(), peer, nic, ib, explanation));
  }

  /**
   * Counts an event of the current line that names its own host and process (a network plugin's line without an
   * NCCL prefix), and keeps it while its kind is under the cap.
   */
  void add(NcclEventKind kind, FaultDomain domain, String host, int pid, String peer, String explanation) {
    long count = counts.merge(kind, 1L, Long::sum);
    if (count > maxPerKind) {
      return;
    }
    kept.computeIfAbsent(kind, k -> new ArrayList<>()).add(new NcclEvent(kind, domain, null, host, pid, -1, -1,
        prefix.lineNumber(), prefix.quote(), "", peer, "", null, explanation));
  }

  /** The kept events in line order. */
  List<NcclEvent> inLineOrder() {
    List<NcclEvent> all = new ArrayList<>();
    for (List<NcclEvent> list : kept.values()) {
      all.addAll(list);
    }
    all.sort(Comparator.comparingLong(NcclEvent::lineNumber));
    return all;
  }

  /** How many events of each kind the log had, kept or not. */
  Map<NcclEventKind, Long> counts() {
    return counts;
  }

  /** True when some kind had more events than were kept. */
  boolean capped() {
    for (long count : counts.values()) {
      if (count > maxPerKind) {
        return true;
      }
    }
    return false;
  }
}
