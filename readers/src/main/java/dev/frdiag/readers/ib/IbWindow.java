package dev.frdiag.readers.ib;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * What the InfiniBand counters did between two snapshots: every counter's movement per port, and the findings
 * they support, most severe first.
 *
 * @param from when the first snapshot was taken
 * @param to when the second was taken
 * @param deltas every counter present in both snapshots, per port present in both
 * @param findings the conclusions, most severe first, then by port
 */
public record IbWindow(Instant from, Instant to, SortedMap<IbPortId, List<IbCounterDelta>> deltas,
    List<IbFinding> findings) {

  /** Physical-layer counters whose rise is a LINK_ERRORS finding. */
  static final List<String> LINK_ERROR_COUNTERS = List.of("symbol_error", "link_error_recovery", "port_rcv_errors",
      "local_link_integrity_errors", "excessive_buffer_overrun_errors");
  /** {@code hw_counters} whose rise is a RETRANSMISSION finding. */
  static final List<String> RETRANSMISSION_COUNTERS = List.of("local_ack_timeout_err", "out_of_sequence",
      "req_transport_retries_exceeded");

  public IbWindow {
    Objects.requireNonNull(from, "from");
    Objects.requireNonNull(to, "to");
    TreeMap<IbPortId, List<IbCounterDelta>> copy = new TreeMap<>();
    deltas.forEach((k, v) -> copy.put(k, List.copyOf(v)));
    deltas = Collections.unmodifiableSortedMap(copy);
    findings = List.copyOf(findings);
  }

  /** Compares two snapshots with the default thresholds. */
  public static IbWindow between(IbSnapshot before, IbSnapshot after) {
    return between(before, after, IbThresholds.defaults());
  }

  /** Compares two snapshots; {@code before} should be the earlier. */
  static IbWindow between(IbSnapshot before, IbSnapshot after, IbThresholds thresholds) {
    Objects.requireNonNull(before, "before");
    Objects.requireNonNull(after, "after");
    Objects.requireNonNull(thresholds, "thresholds");
    Duration window = Duration.between(before.takenAt(), after.takenAt());
    SortedMap<IbPortId, List<IbCounterDelta>> deltas = new TreeMap<>();
    List<IbFinding> findings = new ArrayList<>();
    for (Map.Entry<IbPortId, IbPortSnapshot> e : before.ports().entrySet()) {
      IbPortId id = e.getKey();
      IbPortSnapshot b = e.getValue();
      IbPortSnapshot a = after.ports().get(id);
      if (a == null) {
        findings.add(new IbFinding(IbFindingKind.NIC_DISAPPEARED, id, "", 0, 0, 0, false,
            id + " was present (" + describeState(b) + ") and is gone " + seconds(window)
                + " later: the HCA failed, was reset, or fell off the PCIe bus"));
        continue;
      }
      List<IbCounterDelta> portDeltas = new ArrayList<>();
      addDeltas(b.counters(), a.counters(), false, portDeltas);
      addDeltas(b.hwCounters(), a.hwCounters(), true, portDeltas);
      deltas.put(id, portDeltas);
      findings.addAll(classify(id, b, a, portDeltas, thresholds, window));
    }
    for (IbPortId id : after.ports().keySet()) {
      if (!before.ports().containsKey(id)) {
        findings.add(new IbFinding(IbFindingKind.NIC_APPEARED, id, "", 0, 0, 0, false,
            id + " appeared (" + describeState(after.ports().get(id)) + "): a device reset or hot-plug in the"
                + " window"));
      }
    }
    findings.sort(Comparator.comparing(IbFinding::kind).thenComparing(IbFinding::port));
    return new IbWindow(before.takenAt(), after.takenAt(), deltas, findings);
  }

  /** The time between the snapshots. */
  Duration duration() {
    return Duration.between(from, to);
  }

  /** The findings of one kind. */
  public List<IbFinding> findings(IbFindingKind kind) {
    return findings.stream().filter(f -> f.kind() == kind).toList();
  }

  /** The findings about one port. */
  public List<IbFinding> findings(IbPortId port) {
    return findings.stream().filter(f -> f.port().equals(port)).toList();
  }

  private static void addDeltas(Map<String, Long> before, Map<String, Long> after, boolean hw,
      List<IbCounterDelta> into) {
    for (Map.Entry<String, Long> e : before.entrySet()) {
      Long a = after.get(e.getKey());
      // lifespan is the counters' cache time in ms, not a counter.
      if (a != null && !(hw && e.getKey().equals("lifespan"))) {
        into.add(IbCounterDelta.of(e.getKey(), hw, e.getValue(), a));
      }
    }
  }

  private static List<IbFinding> classify(IbPortId id, IbPortSnapshot before, IbPortSnapshot after,
      List<IbCounterDelta> deltas, IbThresholds t, Duration window) {
    List<IbFinding> out = new ArrayList<>();
    String in = " in " + seconds(window);
    if (!after.up()) {
      IbPortState s = after.portState();
      out.add(new IbFinding(IbFindingKind.PORT_DOWN, id, "state", before.portState().ordinal(), s.ordinal(),
          s.ordinal() - before.portState().ordinal(), false,
          id + " is not up: state " + quote(after.state()) + ", phys_state " + quote(after.physState())
              + " (was " + quote(before.state()) + ", " + quote(before.physState()) + ")"));
    }
    boolean linkTrouble = false;
    for (IbCounterDelta d : deltas) {
      if (d.hw()) {
        if (RETRANSMISSION_COUNTERS.contains(d.counter()) && d.delta() >= t.retransmissions()) {
          out.add(finding(IbFindingKind.RETRANSMISSION, id, d, id + " retransmits: " + d.describe() + in
              + "; packets are lost or ACKs late on the path (lossy RoCE, a bad link, or a dead peer)"));
        }
        continue;
      }
      if (d.counter().equals("link_downed") && (d.delta() >= t.linkDowned() || d.change()
          == IbCounterDelta.Change.STUCK_SATURATED)) {
        linkTrouble = true;
        out.add(finding(IbFindingKind.LINK_FLAP, id, d, id + " link went down: " + d.describe() + in));
      } else if (LINK_ERROR_COUNTERS.contains(d.counter())
          && (d.delta() >= t.linkErrors() || d.change() == IbCounterDelta.Change.STUCK_SATURATED)) {
        linkTrouble = true;
        out.add(finding(IbFindingKind.LINK_ERRORS, id, d, id + " link errors: " + d.describe() + in
            + "; cable, optic or connector"));
      }
    }
    if (!linkTrouble && after.up()) {
      for (IbCounterDelta d : deltas) {
        boolean wait = d.counter().equals("port_xmit_wait") && d.delta() >= t.xmitWait();
        boolean discards = d.counter().equals("port_xmit_discards") && d.delta() >= t.xmitDiscards();
        if (!d.hw() && (wait || discards)) {
          out.add(finding(IbFindingKind.CONGESTION, id, d, id + " congested: " + d.describe() + in
              + " without link errors; slow, not dead"));
        }
      }
    }
    if (out.isEmpty()) {
      out.add(quiet(id, deltas, in));
    }
    return out;
  }

  private static IbFinding quiet(IbPortId id, List<IbCounterDelta> deltas, String in) {
    IbCounterDelta data = null;
    for (IbCounterDelta d : deltas) {
      if (!d.hw() && d.counter().equals("port_xmit_data")) {
        data = d;
      }
    }
    if (data == null) {
      return new IbFinding(IbFindingKind.QUIET, id, "", 0, 0, 0, false,
          id + ": no error, wait or retransmission counter moved" + in);
    }
    // port_xmit_data counts 4-byte words (per lane), hence the factor of four.
    String traffic = data.delta() == 0 ? "and no data was sent" : "while " + data.delta() * 4 + " bytes were sent";
    return finding(IbFindingKind.QUIET, id, data, id + ": no error, wait or retransmission counter moved" + in
        + " " + traffic);
  }

  private static IbFinding finding(IbFindingKind kind, IbPortId id, IbCounterDelta d, String message) {
    return new IbFinding(kind, id, d.counter(), d.before(), d.after(), d.delta(), d.atLeast(), message);
  }

  private static String describeState(IbPortSnapshot p) {
    return "state " + quote(p.state()) + ", phys_state " + quote(p.physState());
  }

  private static String quote(String raw) {
    return raw.isEmpty() ? "unreadable" : "'" + raw + "'";
  }

  private static String seconds(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() / 1000.0 + " s";
  }
}
