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
import dev.frdiag.proto.v1.RankStatus;
import dev.frdiag.proto.v1.ThreadStacks;
import dev.frdiag.report.Report;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * What the daemon holds about one rank, and the rank's evidence from it. Mutable, and changed only by its own
 * methods; every access holds its {@link Job}'s lock.
 *
 * <p>One concept, although it holds several parts (its stream and liveness, its groups and progress, its window and
 * frames, its events, and the bytes each part costs): every message of the rank changes several of them at once and
 * under one lock, and each byte count is the cost of the part beside it, charged before the part grows
 * ({@link StateBudget}). Apart, the counts would have to be kept in step with parts they cannot see. The window's
 * records live in {@link RankWindow}, the restart's wait in {@link RestartReturn}.
 */
final class RankState {
  static final int MAX_EVENTS = 64;
  static final int MAX_FRAMES = 65_536;

  private RankIdentity identity;
  /** Its groups by name; changed only through {@link #putGroup}. */
  private final Map<String, ProcessGroup> groups = new LinkedHashMap<>();
  /** The newest records by record id, bounded by the job's window size; null until the rank sends one. */
  private RankWindow window;
  private final Map<Integer, Frame> frames = new HashMap<>();
  // What the last analysis was given, kept until they change: a hung job's every incident reads the same ones, and
  // copying 16,384 ranks' frames and groups for each took longer than building their records ahead.
  private Map<Integer, Frame> framesCopy;
  private List<ProcessGroup> groupsCopy;
  private final Map<String, ProcessGroupProgress> progress = new LinkedHashMap<>();
  /** Daemon monotonic time at which each group's completed seq last advanced. */
  private final Map<String, Long> lastAdvanceNanos = new HashMap<>();
  /** The rank's own send time (epoch ns) of the heartbeat that last advanced each group; absent when not sent. */
  private final Map<String, Long> lastAdvanceSentNs = new HashMap<>();
  /** The rank's own send time of its newest heartbeat; 0 when its heartbeats carry none. */
  private long latestSentNs;
  /** Its newest heartbeat said every record of its ring reached the daemon before it (at latestSentNs). */
  private boolean recordsCurrent;
  /**
   * Send time of its newest heartbeat on this stream that said every record had reached the daemon (0 when none):
   * the window's records are at least as new as they were then, even while later ones are still on their way.
   */
  private long windowCurrentAtNs;
  private final ArrayDeque<RankEvent> events = new ArrayDeque<>();
  private Liveness liveness = Liveness.ALIVE;
  private RankLink link;
  private String session = "";
  private long lastSeenNanos;
  private long lastSeenMs;
  private long lostAtNanos;
  /** Lost only because it went silent: its stream is still open, and any message brings it back. */
  private boolean silent;
  private long droppedRecords;
  /** An incident already covered this rank's loss; only a new loss (after it was heard again) opens another. */
  private boolean lossReported;
  /** An event arrived that no incident has looked at yet. */
  private boolean unhandledEvent;
  /**
   * Connected before the daemon restarted and not back yet: neither alive nor lost until it comes back or the time
   * it had for that has passed ({@link Job#awaitingReturn}).
   */
  private boolean awaited;
  /** What it holds, as {@link StateBudget} counts it ({@link StateBytes}); the parts below are within it. */
  private long bytes = StateBytes.RANK;
  private long progressBytes;
  /** When a new process last took the rank over (daemon monotonic time); MIN_VALUE when none has. */
  private long restartedAtNanos = Long.MIN_VALUE;
  private long framesBytes;

  /**
   * The rank (re)connected on {@code session}. A new process for it (another pid, the job restarted it) leaves its old
   * ring and progress as history. Frame ids are scoped to one stream, and a new stream's window is current only once
   * its heartbeat says so.
   */
  void attach(RankIdentity identity, RankLink link, String session, long dropped, long nowNanos, long nowMs) {
    if (this.identity != null && this.identity.getPid() != identity.getPid()) {
      restartedAtNanos = nowNanos;
      if (window != null) {
        window.clear();
      }
      progress.clear();
      bytes -= progressBytes;
      progressBytes = 0;
      lastAdvanceNanos.clear();
      lastAdvanceSentNs.clear();
      latestSentNs = 0;
    }
    bytes += StateBytes.message(identity) - (this.identity == null ? 0 : StateBytes.message(this.identity));
    this.identity = identity;
    this.link = link;
    this.session = session;
    awaited = false;
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

  /**
   * The rank was connected, as {@code identity} says, when the daemon stopped: it is expected back on a new stream,
   * and until then counts as neither alive nor lost.
   */
  void awaitReturn(RankIdentity identity) {
    bytes += StateBytes.message(identity) - (this.identity == null ? 0 : StateBytes.message(this.identity));
    this.identity = identity;
    liveness = Liveness.UNKNOWN;
    awaited = true;
  }

  /** Connected before the daemon restarted, and not back yet. */
  boolean awaited() {
    return awaited;
  }

  /**
   * It did not come back in the time it had after the daemon restarted ({@code ended} false): lost as a rank that
   * went silent is, its process perhaps alive but unheard. Or its whole job ended while the daemon was away
   * ({@code ended}): finished.
   */
  void notBack(boolean ended, long nowNanos) {
    awaited = false;
    if (ended) {
      liveness = Liveness.FINISHED;
    } else {
      liveness = Liveness.LOST;
      silent = true;
      lostAtNanos = nowNanos;
    }
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
   * A heartbeat sent at {@code sentAtNs} by the rank's own clock (epoch ns; 0 when it did not say), which may say
   * every record of its ring reached the daemon before it ({@code recordsCurrent}).
   */
  void heartbeat(List<ProcessGroupProgress> progress, long dropped, long sentAtNs, boolean recordsCurrent,
      long nowNanos, long nowMs) {
    lastSeenMs = nowMs;
    latestSentNs = Math.max(0, sentAtNs);
    this.recordsCurrent = recordsCurrent && sentAtNs > 0;
    if (this.recordsCurrent) {
      windowCurrentAtNs = Math.max(windowCurrentAtNs, sentAtNs);
    }
    dropped(dropped);
    for (ProcessGroupProgress p : progress) {
      if (!groups.containsKey(p.getProcessGroup())) {
        // Progress of a group the rank never announced has no members to judge a stall by, and would let a
        // client grow this map without bound.
        continue;
      }
      ProcessGroupProgress before = this.progress.put(p.getProcessGroup(), p);
      if (before == null) {
        long entry = StateBytes.progress(p.getProcessGroup());
        progressBytes += entry;
        bytes += entry;
      }
      // The group's quiet time runs from its last advance, or from when it went from idle to having work (an op
      // issued after an idle spell is not stuck for the time the group sat idle; DIAGNOSIS.md §3).
      if (before == null || p.getLastCompletedSeq() > before.getLastCompletedSeq()
          || p.getLastCompletedP2PSeq() > before.getLastCompletedP2PSeq()
          || !StallCheck.outstanding(before) && StallCheck.outstanding(p)) {
        lastAdvanceNanos.put(p.getProcessGroup(), nowNanos);
        if (sentAtNs > 0) {
          lastAdvanceSentNs.put(p.getProcessGroup(), sentAtNs);
        } else {
          lastAdvanceSentNs.remove(p.getProcessGroup());
        }
      }
    }
  }

  /**
   * Keeps {@code records} in a window of {@code capacity}, each with its shared part: {@code templates}' copy of the
   * template it names, or its own strings and lists made the job's by {@code interner}.
   */
  void records(List<CollectiveRecord> records, IntFunction<CollectiveRecord> templates, List<InternedFrame> frames,
      RecordInterner interner, int capacity) {
    if (window == null && !records.isEmpty()) {
      window = new RankWindow(capacity);
      bytes += capacity * StateBytes.WINDOW_SLOT;
    }
    for (CollectiveRecord rec : records) {
      // A record that carries its own group and op is its own shared part, its strings and lists the job's.
      window.put(rec, rec.getTemplateId() != 0 ? templates.apply(rec.getTemplateId()) : interner.intern(rec));
    }
    for (InternedFrame f : frames) {
      long cost = frameCost(f, interner);
      putFrame(f.getId(), interner.frame(f.getFrame()), cost);
    }
  }

  /** The bytes {@link #records} would add for its window: all of it, on the rank's first records. */
  long windowGrowth(int records, int capacity) {
    return window == null && records > 0 ? capacity * StateBytes.WINDOW_SLOT : 0;
  }

  /** The bytes {@link #records} would add at most for the frames it does not hold yet. */
  long framesGrowth(List<InternedFrame> frames, RecordInterner interner) {
    long growth = 0;
    for (InternedFrame f : frames) {
      if (!this.frames.containsKey(f.getId())) {
        growth += frameCost(f, interner);
      }
    }
    return growth;
  }

  /** A new frame id's entry, and its frame's own bytes unless the job already holds an equal one. */
  private static long frameCost(InternedFrame f, RecordInterner interner) {
    return StateBytes.FRAME_ENTRY + (interner.knowsFrame(f.getFrame()) ? 0 : StateBytes.message(f.getFrame()));
  }

  /** The bytes {@link #heartbeat} would add at most: an entry for each announced group it has no progress of. */
  long progressGrowth(List<ProcessGroupProgress> progress) {
    long growth = 0;
    java.util.Set<String> counted = null;
    for (ProcessGroupProgress p : progress) {
      String group = p.getProcessGroup();
      if (groups.containsKey(group) && !this.progress.containsKey(group)) {
        if (counted == null) {
          counted = new java.util.HashSet<>();
        }
        if (counted.add(group)) {
          growth += StateBytes.progress(group);
        }
      }
    }
    return growth;
  }

  /** Records its ring overwrote before shipping them, as the rank last counted them. */
  void dropped(long dropped) {
    droppedRecords = Math.max(droppedRecords, dropped);
  }

  /** Keeps {@code event}, the newest {@value #MAX_EVENTS}; an incident is due to look at it. */
  void event(RankEvent event) {
    if (events.size() == MAX_EVENTS) {
      bytes -= StateBytes.message(events.removeFirst());
    }
    events.addLast(event);
    bytes += StateBytes.message(event);
    unhandledEvent = true;
  }

  /** The rank said Goodbye. */
  void finished() {
    liveness = Liveness.FINISHED;
    link = null;
  }

  /** Its stream ended without Goodbye, or its heartbeats stopped: presumed gone, unless already finished or lost. */
  void lost(long nowNanos) {
    if (liveness != Liveness.ALIVE && !silent) {
      return;
    }
    if (!silent) {
      lostAtNanos = nowNanos;
    }
    liveness = Liveness.LOST;
    silent = false;
    link = null;
  }

  /**
   * Marks an alive rank lost, though its stream is still open, when nothing of it was read for {@code timeout}
   * before {@code readUntil} (the moment up to which the daemon has read every message).
   */
  void silenceCheck(long readUntil, Duration timeout, long nowNanos) {
    if (liveness == Liveness.ALIVE && readUntil - lastSeenNanos > timeout.toNanos()) {
      liveness = Liveness.LOST;
      silent = true;
      lostAtNanos = nowNanos;
    }
  }

  /** What its loss opens an incident as when lost for {@code grace} and not yet covered by one; else null. */
  Report.Trigger lossTrigger(long nowNanos, Duration grace) {
    if (liveness == Liveness.LOST && !lossReported && nowNanos - lostAtNanos >= grace.toNanos()) {
      return silent ? Report.Trigger.HEARTBEAT_LOST : Report.Trigger.RANK_LOST;
    }
    return null;
  }

  /** The kind of its newest event when no incident has looked at it yet; else null. */
  RankEvent.Kind unhandledEvent() {
    return unhandledEvent && !events.isEmpty() ? events.getLast().getKind() : null;
  }

  /** An incident opened: its events are part of it, and so is its loss. */
  void incidentOpened() {
    eventsHandled();
    if (liveness == Liveness.LOST) {
      lossReported = true;
    }
  }

  /** An incident covered its events. */
  void eventsHandled() {
    unhandledEvent = false;
  }

  Liveness liveness() {
    return liveness;
  }

  RankIdentity identity() {
    return identity;
  }

  /** The stream that speaks for the rank now. */
  String session() {
    return session;
  }

  /** Where to ask it for a snapshot; null when its stream is gone. */
  RankLink link() {
    return link;
  }

  /** Its stream is open and heard from: no other stream may claim it. */
  boolean live() {
    return link != null && liveness == Liveness.ALIVE;
  }

  long droppedRecords() {
    return droppedRecords;
  }

  /** The rank as the Diagnosis service lists it. */
  RankStatus status(int rank) {
    return RankStatus.newBuilder().setGlobalRank(rank).setHostname(identity.getHostname()).setPid(identity.getPid())
        .setLiveness(switch (liveness) {
          case ALIVE -> RankStatus.Liveness.CONNECTED;
          case LOST -> RankStatus.Liveness.LOST;
          case FINISHED -> RankStatus.Liveness.FINISHED;
          case UNKNOWN, UNRESPONSIVE -> RankStatus.Liveness.LIVENESS_UNSPECIFIED;
        }).setLastSeenMs(lastSeenMs).setDroppedRecords(droppedRecords).build();
  }

  /**
   * Whether this rank's window stands for a snapshot taken no earlier than {@code sinceEpochNs}: connected, alive and
   * heard from, and its newest heartbeat, sent then or later, said every record of its ring had reached the daemon.
   */
  boolean windowCurrentSince(long sinceEpochNs) {
    return link != null && liveness == Liveness.ALIVE && !silent && recordsCurrent && latestSentNs >= sinceEpochNs;
  }

  /** Builds the records of its window, if it has one, so that the next read finds them built; false when none. */
  boolean buildWindow() {
    if (window == null) {
      return false;
    }
    window.records();
    return true;
  }

  void putGroup(ProcessGroup g) {
    if (groups.put(g.getName(), g) == null) {
      bytes += StateBytes.GROUP_ENTRY;
    }
    groupsCopy = null;
  }

  /** What it holds, in bytes as {@link StateBudget} counts them. */
  long bytes() {
    return bytes;
  }

  /** Groups it announced. */
  int groupCount() {
    return groups.size();
  }

  /** Whether it announced a group named {@code name}. */
  boolean knowsGroup(String name) {
    return groups.containsKey(name);
  }

  /** The job's copy of the group it announced as {@code name}, or the name itself for one never announced. */
  Object groupKey(String name) {
    ProcessGroup g = groups.get(name);
    return g == null ? name : g;
  }

  /** Its newest progress on each group. */
  Collection<ProcessGroupProgress> progress() {
    return Collections.unmodifiableCollection(progress.values());
  }

  /** Whether it advanced group {@code name}, by the daemon's clock, after {@code sinceNanos}. */
  boolean advancedSince(String name, long sinceNanos) {
    Long advanced = lastAdvanceNanos.get(name);
    return advanced != null && advanced > sinceNanos;
  }

  /** Whether a new process took the rank over (another pid), by the daemon's clock, after {@code sinceNanos}. */
  boolean restartedSince(long sinceNanos) {
    return restartedAtNanos != Long.MIN_VALUE && restartedAtNanos > sinceNanos;
  }

  /** Whether it advanced any group, by the daemon's clock, after {@code sinceNanos}. */
  boolean advancedSince(long sinceNanos) {
    return lastAdvanceNanos.values().stream().anyMatch(t -> t > sinceNanos);
  }

  /**
   * How long it has gone without advancing {@code group}: between its own send times when its heartbeats carry
   * them (one clock, so no skew between hosts; a heartbeat that arrives late shows the rank as it was when sent, not
   * as stuck for the time it spent in queues), else by the daemon's clock since the advance arrived.
   */
  long quietNanos(String group, long nowNanos) {
    Long advancedSent = lastAdvanceSentNs.get(group);
    if (latestSentNs > 0 && advancedSent != null) {
      return latestSentNs - advancedSent;
    }
    return nowNanos - lastAdvanceNanos.getOrDefault(group, lastSeenNanos);
  }

  /** Keeps a frame its stream named, up to {@link #MAX_FRAMES}, counting {@code cost} for a new id. */
  private void putFrame(int id, Frame f, long cost) {
    if (frames.size() < MAX_FRAMES) {
      if (frames.put(id, f) == null) {
        framesBytes += cost;
        bytes += cost;
      }
      framesCopy = null;
    }
  }

  /** Forgets the frames (their ids are scoped to one stream). */
  private void clearFrames() {
    frames.clear();
    bytes -= framesBytes;
    framesBytes = 0;
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
    // Where its Python threads were when it replied: the agent asks its worker server alongside the dump.
    return new RankEvidence(rank, identity, seen, answered, missing, groupsCopy(), records,
        snapshotProgress, new ArrayList<>(events), snapshotFrames, RankEvidence.Source.RECORDS,
        windowCurrentAtNs, reply == null ? ThreadStacks.getDefaultInstance() : reply.getStacks());
  }
}
