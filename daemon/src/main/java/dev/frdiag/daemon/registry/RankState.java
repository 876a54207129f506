package dev.frdiag.daemon.registry;

import dev.frdiag.analysis.Liveness;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.InternedFrame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the daemon holds about one rank, and the rank's evidence from it. Mutable; every access holds its
 * {@link Job}'s lock.
 */
final class RankState {
  static final int MAX_EVENTS = 64;
  static final int MAX_FRAMES = 65_536;

  RankIdentity identity;
  /** Its groups by name; changed only through {@link #putGroup}. */
  final Map<String, ProcessGroup> groups = new LinkedHashMap<>();
  /** The newest records by record id, bounded by the job's window size; null until the rank sends one. */
  RankWindow window;
  private final Map<Integer, Frame> frames = new HashMap<>();
  // What the last analysis was given, kept until they change: a hung job's every incident reads the same ones, and
  // copying 16,384 ranks' frames and groups for each took longer than building their records ahead.
  private Map<Integer, Frame> framesCopy;
  private List<ProcessGroup> groupsCopy;
  final Map<String, ProcessGroupProgress> progress = new LinkedHashMap<>();
  /** Daemon monotonic time at which each group's completed seq last advanced. */
  final Map<String, Long> lastAdvanceNanos = new HashMap<>();
  /** The rank's own send time (epoch ns) of the heartbeat that last advanced each group; absent when not sent. */
  final Map<String, Long> lastAdvanceSentNs = new HashMap<>();
  /** The rank's own send time of its newest heartbeat; 0 when its heartbeats carry none. */
  long latestSentNs;
  /** Its newest heartbeat said every record of its ring reached the daemon before it (at latestSentNs). */
  boolean recordsCurrent;
  /**
   * Send time of its newest heartbeat on this stream that said every record had reached the daemon (0 when none):
   * the window's records are at least as new as they were then, even while later ones are still on their way.
   */
  long windowCurrentAtNs;
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

  /**
   * The rank (re)connected on {@code session}. A new process for it (another pid, the job restarted it) leaves its old
   * ring and progress as history. Frame ids are scoped to one stream, and a new stream's window is current only once
   * its heartbeat says so.
   */
  void attach(RankIdentity identity, RankLink link, String session, long dropped, long nowNanos, long nowMs) {
    if (this.identity != null && this.identity.getPid() != identity.getPid()) {
      if (window != null) {
        window.clear();
      }
      progress.clear();
      lastAdvanceNanos.clear();
      lastAdvanceSentNs.clear();
      latestSentNs = 0;
    }
    this.identity = identity;
    this.link = link;
    this.session = session;
    liveness = Liveness.ALIVE;
    silent = false;
    lossReported = false;
    lastSeenNanos = nowNanos;
    lastSeenMs = nowMs;
    droppedRecords = dropped;
    clearFrames();
    recordsCurrent = false;
    windowCurrentAtNs = 0;
  }

  /** Heard from on its stream: a silent rank that speaks again was slow, not dead. */
  void heard(long nowNanos) {
    lastSeenNanos = nowNanos;
    if (silent && liveness == Liveness.LOST) {
      liveness = Liveness.ALIVE;
      silent = false;
      lossReported = false;
    }
  }

  /**
   * Whether this rank's window stands for a snapshot taken no earlier than {@code sinceEpochNs}: connected, alive and
   * heard from, and its newest heartbeat, sent then or later, said every record of its ring had reached the daemon.
   */
  boolean windowCurrentSince(long sinceEpochNs) {
    return link != null && liveness == Liveness.ALIVE && !silent && recordsCurrent && latestSentNs >= sinceEpochNs;
  }

  void putGroup(ProcessGroup g) {
    groups.put(g.getName(), g);
    groupsCopy = null;
  }

  /** Keeps a frame its stream named, up to {@link #MAX_FRAMES}. */
  void putFrame(int id, Frame f) {
    if (frames.size() < MAX_FRAMES) {
      frames.put(id, f);
      framesCopy = null;
    }
  }

  /** Forgets the frames (their ids are scoped to one stream). */
  void clearFrames() {
    frames.clear();
    framesCopy = null;
  }

  private Map<Integer, Frame> framesCopy() {
    if (framesCopy == null) {
      framesCopy = Map.copyOf(frames);
    }
    return framesCopy;
  }

  private List<ProcessGroup> groupsCopy() {
    if (groupsCopy == null) {
      groupsCopy = List.copyOf(groups.values());
    }
    return groupsCopy;
  }

  /**
   * This rank as an analysis sees it: its snapshot {@code reply} when it answered, else its window, which counts as
   * an answer when it {@code standsIn} for the snapshot.
   */
  RankEvidence evidence(int rank, DumpReply reply, boolean standsIn, String noReplyReason) {
    List<CollectiveRecord> records;
    Map<Integer, Frame> snapshotFrames;
    List<ProcessGroupProgress> snapshotProgress;
    boolean answered = reply != null && reply.getError().isEmpty()
        || reply == null && standsIn && liveness == Liveness.ALIVE;
    if (answered && reply != null && reply.getRecordsOnStream()) {
      // Every record of its ring came on its stream before the reply: the window is the snapshot.
      records = window == null ? List.of() : window.records();
      snapshotFrames = framesCopy();
      snapshotProgress = reply.getProgressList();
    } else if (answered && reply != null) {
      records = reply.getRecordsList();
      snapshotFrames = new HashMap<>();
      for (InternedFrame f : reply.getFramesList()) {
        snapshotFrames.put(f.getId(), f.getFrame());
      }
      snapshotProgress = reply.getProgressList();
    } else {
      records = window == null ? List.of() : window.records();
      snapshotFrames = framesCopy();
      snapshotProgress = new ArrayList<>(progress.values());
    }
    String missing = answered ? "" : reply != null ? "dump failed: " + reply.getError()
        : liveness == Liveness.LOST ? "stream lost" : noReplyReason;
    // A rank that answered the dump request is alive, however late its heartbeats were; one that only went
    // silent (its stream still open) may be slow rather than gone: that is unknown, not dead.
    Liveness seen = answered ? Liveness.ALIVE
        : reply != null ? Liveness.UNRESPONSIVE
        : silent ? Liveness.UNKNOWN : liveness;
    return new RankEvidence(rank, identity, seen, answered, missing, groupsCopy(), records,
        snapshotProgress, new ArrayList<>(events), snapshotFrames, RankEvidence.Source.RECORDS,
        windowCurrentAtNs);
  }
}
