package dev.frdiag.daemon.registry;

import dev.frdiag.analysis.Liveness;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/** What the daemon holds about one rank. Mutable; every access holds its {@link Job}'s lock. */
final class RankState {
  static final int MAX_EVENTS = 64;
  static final int MAX_FRAMES = 65_536;

  RankIdentity identity;
  final Map<String, ProcessGroup> groups = new LinkedHashMap<>();
  /** The newest records by record id, bounded by the job's window size; null until the rank sends one. */
  RankWindow window;
  final Map<Integer, Frame> frames = new HashMap<>();
  final Map<String, ProcessGroupProgress> progress = new LinkedHashMap<>();
  /** Daemon monotonic time at which each group's completed seq last advanced. */
  final Map<String, Long> lastAdvanceNanos = new HashMap<>();
  /** The rank's own send time (epoch ns) of the heartbeat that last advanced each group; absent when not sent. */
  final Map<String, Long> lastAdvanceSentNs = new HashMap<>();
  /** The rank's own send time of its newest heartbeat; 0 when its heartbeats carry none. */
  long latestSentNs;
  /** Its newest heartbeat said every record of its ring reached the daemon before it (at latestSentNs). */
  boolean recordsCurrent;
  final ArrayDeque<RankEvent> events = new ArrayDeque<>();
  Liveness liveness = Liveness.ALIVE;
  RankLink link;
  String session = "";
  long lastSeenNanos;
  long lastSeenMs;
  long lostAtNanos;
  /** Lost only because it went silent: its stream is still open, and any message brings it back. */
  boolean silent;
  long droppedRecords;
  /** An incident already covered this rank's loss; only a new loss (after it was heard again) opens another. */
  boolean lossReported;
  /** An event arrived that no incident has looked at yet. */
  boolean unhandledEvent;
}
