package dev.frdiag.daemon.registry;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.Liveness;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.InternedFrame;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankStatus;
import dev.frdiag.proto.v1.RecordBatch;
import dev.frdiag.report.Report;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * One training job as the daemon tracks it: its ranks, their latest progress and ring windows, and its
 * {@link Incident}. Thread-safe: every method holds the job's own lock, so jobs never block each other.
 */
public final class Job {
  private final String id;
  private final int window;
  private final int maxGroupsPerRank;
  private final long maxContextBytes;
  private final Object lock = new Object();
  /** Each rank's state is guarded by {@link #lock} as well. */
  @GuardedBy("lock")
  private final Map<Integer, RankState> ranks = new TreeMap<>();
  @GuardedBy("lock")
  private int worldSize;
  private final long firstSeenMs;
  /** Its incident's lifecycle, and the on-demand diagnosis running. */
  @GuardedBy("lock")
  private final Incident incident = new Incident();
  @GuardedBy("lock")
  private String latestReportId = "";
  @GuardedBy("lock")
  private final Map<String, NodeContext> contexts = new TreeMap<>();
  @GuardedBy("lock")
  private long contextBytes;
  /** Daemon monotonic time of the last thing heard from or about the job; idle jobs expire from it. */
  @GuardedBy("lock")
  private long lastActivityNanos;
  /**
   * One copy of each process group the ranks announced: every rank of a 16,384-rank job lists the world group's
   * 16,384 members in its Hello, and a copy per rank would be a gigabyte.
   */
  @GuardedBy("lock")
  private final Map<ProcessGroup, ProcessGroup> sharedGroups = new HashMap<>();
  /** The one copy of the strings, shapes and stacks its ranks' kept records repeat. */
  @GuardedBy("lock")
  private final RecordInterner interner = new RecordInterner();
  /** The scheduler's names for the job, as its ranks' Hellos gave them; the newest Hello wins a key. */
  @GuardedBy("lock")
  private final Map<String, String> scheduler = new TreeMap<>();

  Job(String id, int worldSize, int window, long nowMs) {
    this(id, worldSize, window, dev.frdiag.daemon.Limits.defaults(), nowMs, 0);
  }

  Job(String id, int worldSize, int window, dev.frdiag.daemon.Limits limits, long nowMs, long nowNanos) {
    this.id = id;
    this.worldSize = worldSize;
    this.window = limits.windowFor(window, worldSize);
    this.maxGroupsPerRank = limits.maxGroupsPerRank();
    this.maxContextBytes = limits.maxContextBytesPerJob();
    this.firstSeenMs = nowMs;
    this.lastActivityNanos = nowNanos;
  }

  public String id() {
    return id;
  }

  /**
   * A rank (re)connected on {@code session}: replaces an earlier stream of the same rank only when that stream is
   * no longer alive (ended, or silent past the heartbeat timeout). From then on only this session speaks for the
   * rank; messages of any other session are ignored.
   *
   * @throws ClaimRefusedException when a live stream holds the rank, or live ranks report another world size
   * @throws LimitExceededException when the rank announces more process groups than the limit
   */
  public void attach(RankIdentity identity, List<ProcessGroup> groups, RankLink link, String session,
      long dropped, long nowNanos, long nowMs) {
    synchronized (lock) {
      if (identity.getWorldSize() != worldSize) {
        long live = ranks.values().stream().filter(Job::live).count();
        if (live > 0) {
          throw new ClaimRefusedException(ClaimRefusedException.Conflict.SHAPE_IN_USE, "rank "
              + identity.getGlobalRank() + " says world size " + identity.getWorldSize() + " but job " + id
              + " has world size " + worldSize + " with " + live + " live ranks; refused while they are connected");
        }
        // No live rank holds the old shape (an elastic restart, or a claim that went away): the old ranks are history.
        ranks.clear();
        worldSize = identity.getWorldSize();
      }
      RankState existing = ranks.get(identity.getGlobalRank());
      if (existing != null && live(existing) && !existing.session.equals(session)) {
        throw new ClaimRefusedException(ClaimRefusedException.Conflict.RANK_IN_USE, "rank "
            + identity.getGlobalRank() + " of job " + id + " is already connected (host "
            + existing.identity.getHostname() + ", pid " + existing.identity.getPid()
            + "); a second stream for it is refused while the first is alive");
      }
      checkGroupLimit(existing == null ? 0 : existing.groups.size(), groups, identity.getGlobalRank());
      lastActivityNanos = nowNanos;
      RankState r = ranks.computeIfAbsent(identity.getGlobalRank(), k -> new RankState());
      r.attach(identity, link, session, dropped, nowNanos, nowMs);
      addGroups(r, groups);
    }
  }

  /**
   * Records where the job runs as a rank's Hello names it (Slurm job, Kubernetes pod, torchrun run); the newest
   * value of a key wins, so a requeued job's restart count is the current one.
   */
  public void scheduler(Map<String, String> names) {
    synchronized (lock) {
      scheduler.putAll(names);
    }
  }

  /** Where the job runs as its scheduler names it, keys sorted; empty when no rank said. */
  public Map<String, String> scheduler() {
    synchronized (lock) {
      return Collections.unmodifiableMap(new TreeMap<>(scheduler));
    }
  }

  /** Groups a rank created after its Hello. */
  public void addGroups(int rank, String session, List<ProcessGroup> groups, long nowNanos) {
    synchronized (lock) {
      RankState r = current(rank, session);
      if (r != null) {
        checkGroupLimit(r.groups.size(), groups, rank);
        addGroups(r, groups);
        heard(r, nowNanos);
      }
    }
  }

  private void checkGroupLimit(int known, List<ProcessGroup> groups, int rank) {
    if (known + groups.size() > maxGroupsPerRank) {
      long added = groups.stream().map(ProcessGroup::getName).distinct().count();
      if (known + added > maxGroupsPerRank) {
        throw new LimitExceededException("rank " + rank + " of job " + id + " announced more than "
            + maxGroupsPerRank + " process groups");
      }
    }
  }

  /** The rank's state when {@code session} is the one that speaks for it now, else null (a stale stream). */
  @GuardedBy("lock")
  private RankState current(int rank, String session) {
    RankState r = ranks.get(rank);
    return r != null && r.session.equals(session) ? r : null;
  }

  /** A rank whose stream is open and heard from: no other stream may claim it. */
  private static boolean live(RankState r) {
    return r.link != null && r.liveness == Liveness.ALIVE;
  }

  /** True when {@code session} is the stream that speaks for {@code rank} now. */
  public boolean isCurrent(int rank, String session) {
    synchronized (lock) {
      return current(rank, session) != null;
    }
  }

  @GuardedBy("lock")
  private void addGroups(RankState r, List<ProcessGroup> groups) {
    for (ProcessGroup g : groups) {
      r.putGroup(sharedGroups.computeIfAbsent(g, x -> x));
    }
  }

  /** True when {@code rank} announced a group named {@code name}. */
  public boolean knowsGroup(int rank, String name) {
    synchronized (lock) {
      RankState r = ranks.get(rank);
      return r != null && r.groups.containsKey(name);
    }
  }

  @GuardedBy("lock")
  private void heard(RankState r, long nowNanos) {
    r.heard(nowNanos);
    lastActivityNanos = nowNanos;
  }

  public void heartbeat(int rank, String session, List<ProcessGroupProgress> progress, long dropped, long nowNanos,
      long nowMs) {
    heartbeat(rank, session, progress, dropped, 0, nowNanos, nowMs);
  }

  /**
   * A heartbeat the rank sent at {@code sentAtNs} by its own clock (epoch ns; 0 when it did not say): the watchdog
   * measures how long a group has gone without progress between the rank's own send times, so heartbeats that reach
   * the daemon late do not look like a stall.
   */
  public void heartbeat(int rank, String session, List<ProcessGroupProgress> progress, long dropped, long sentAtNs,
      long nowNanos, long nowMs) {
    heartbeat(rank, session, progress, dropped, sentAtNs, false, nowNanos, nowMs);
  }

  /**
   * A heartbeat as above that may say every record of the rank's ring reached the daemon before it
   * ({@code recordsCurrent}): the rank's window is then as current as a snapshot taken at {@code sentAtNs}.
   */
  public void heartbeat(int rank, String session, List<ProcessGroupProgress> progress, long dropped, long sentAtNs,
      boolean recordsCurrent, long nowNanos, long nowMs) {
    synchronized (lock) {
      RankState r = current(rank, session);
      if (r == null) {
        return;
      }
      heard(r, nowNanos);
      r.lastSeenMs = nowMs;
      r.latestSentNs = Math.max(0, sentAtNs);
      r.recordsCurrent = recordsCurrent && sentAtNs > 0;
      if (r.recordsCurrent) {
        r.windowCurrentAtNs = Math.max(r.windowCurrentAtNs, sentAtNs);
      }
      r.droppedRecords = Math.max(r.droppedRecords, dropped);
      for (ProcessGroupProgress p : progress) {
        if (!r.groups.containsKey(p.getProcessGroup())) {
          // Progress of a group the rank never announced has no members to judge a stall by, and would let a
          // client grow this map without bound.
          continue;
        }
        ProcessGroupProgress before = r.progress.put(p.getProcessGroup(), p);
        // The group's quiet time runs from its last advance, or from when it went from idle to having work (an op
        // issued after an idle spell is not stuck for the time the group sat idle; DIAGNOSIS.md §3).
        if (before == null || p.getLastCompletedSeq() > before.getLastCompletedSeq()
            || p.getLastCompletedP2PSeq() > before.getLastCompletedP2PSeq()
            || !StallCheck.outstanding(before) && StallCheck.outstanding(p)) {
          r.lastAdvanceNanos.put(p.getProcessGroup(), nowNanos);
          if (sentAtNs > 0) {
            r.lastAdvanceSentNs.put(p.getProcessGroup(), sentAtNs);
          } else {
            r.lastAdvanceSentNs.remove(p.getProcessGroup());
          }
        }
      }
    }
  }

  /**
   * Takes in a batch of {@code rank}'s records on {@code session}: its new templates kept in {@code templates} (the
   * stream's own table), and every template and record checked against that table and the groups the rank
   * announced. Nothing is taken in from a batch that fails a check, nor from a stream that no longer speaks for the
   * rank.
   *
   * @throws IllegalArgumentException describing the batch's first malformed template or record
   */
  public void records(int rank, String session, RecordBatch batch, TemplateTable templates, long nowNanos) {
    synchronized (lock) {
      Predicate<String> announced = announced(rank);
      templates.add(batch.getTemplatesList(), announced, interner::shared);
      templates.check(batch.getRecordsList(), announced);
      RankState r = current(rank, session);
      if (r == null) {
        return;
      }
      heard(r, nowNanos);
      r.droppedRecords = Math.max(r.droppedRecords, batch.getDroppedRecords());
      if (r.window == null) {
        r.window = new RankWindow(window);
      }
      for (CollectiveRecord rec : batch.getRecordsList()) {
        // A record that carries its own group and op is its own shared part, its strings and lists the job's.
        r.window.put(rec, rec.getTemplateId() != 0 ? templates.get(rec.getTemplateId()) : interner.intern(rec));
      }
      for (InternedFrame f : batch.getFramesList()) {
        r.putFrame(f.getId(), interner.frame(f.getFrame()));
      }
    }
  }

  /**
   * {@code rank}'s snapshot {@code reply} as an investigation keeps it: its newest {@link #window} records (a rank
   * that ignores the request's {@code max_records}, an older client, must not make the daemon hold its whole ring for
   * every rank of a large job), checked against the templates it carries and the groups the rank announced, and when
   * {@code keep}, with its records whole and sharing what this job's kept records repeat ({@link RecordInterner}): a
   * snapshot of every rank arrives at once, and as parsed from the wire it took four times the memory of the
   * windows themselves (a 1 GB heap filled at 4,096 ranks before any reply was read). A reply not kept (late, or
   * never asked for) is checked all the same.
   *
   * @return the reply to keep; null when not {@code keep}
   * @throws IllegalArgumentException describing the reply's first malformed template or record
   */
  public DumpReply snapshot(int rank, DumpReply reply, boolean keep) {
    DumpReply newest = newest(reply, window);
    if (newest.getRecordsCount() == 0 && newest.getTemplatesCount() == 0 && newest.getFramesCount() == 0) {
      // Nothing to check or share (a reply whose records are on the stream): no need to wait for the job's lock.
      return keep ? newest : null;
    }
    synchronized (lock) {
      Predicate<String> announced = announced(rank);
      TemplateTable templates = keep ? new TemplateTable() : TemplateTable.checkOnly();
      templates.add(newest.getTemplatesList(), announced, interner::shared);
      templates.check(newest.getRecordsList(), announced);
      return keep ? interner.shared(newest, templates::get) : null;
    }
  }

  /** {@code reply} with only its newest {@code max} records. */
  static DumpReply newest(DumpReply reply, int max) {
    int n = reply.getRecordsCount();
    if (n <= max) {
      return reply;
    }
    return reply.toBuilder().clearRecords().addAllRecords(reply.getRecordsList().subList(n - max, n)).build();
  }

  /** Whether {@code rank} announced a group of a name, whichever stream speaks for it. */
  @GuardedBy("lock")
  private Predicate<String> announced(int rank) {
    RankState r = ranks.get(rank);
    return r == null ? name -> false : r.groups::containsKey;
  }

  public void event(int rank, String session, RankEvent event, long nowNanos) {
    synchronized (lock) {
      RankState r = current(rank, session);
      if (r == null) {
        return;
      }
      heard(r, nowNanos);
      if (r.events.size() == RankState.MAX_EVENTS) {
        r.events.removeFirst();
      }
      r.events.addLast(event);
      r.unhandledEvent = true;
    }
  }

  /** The rank said Goodbye. */
  public void finished(int rank, String session) {
    synchronized (lock) {
      RankState r = ranks.get(rank);
      if (r != null && r.session.equals(session)) {
        r.liveness = Liveness.FINISHED;
        r.link = null;
      }
    }
  }

  /** The rank's stream ended without Goodbye (or its heartbeats stopped): its process is presumed gone. */
  public void lost(int rank, String session, long nowNanos) {
    synchronized (lock) {
      RankState r = ranks.get(rank);
      if (r != null && (session == null || r.session.equals(session))
          && (r.liveness == Liveness.ALIVE || r.silent)) {
        if (!r.silent) {
          r.lostAtNanos = nowNanos;
        }
        r.liveness = Liveness.LOST;
        r.silent = false;
        r.link = null;
      }
    }
  }

  /**
   * Records kept per rank: the daemon's window, or less for a job so large that its ranks would hold more than the
   * job's share ({@link dev.frdiag.daemon.Limits#windowFor}). Snapshot replies are asked for and kept to this too.
   */
  public int window() {
    return window;
  }

  /** Whether a rank of this job announced a group equal to {@code group} (members, layout, name) and it was kept. */
  public boolean holdsGroup(ProcessGroup group) {
    synchronized (lock) {
      return sharedGroups.containsKey(group);
    }
  }

  /**
   * The connected ranks whose window stands for a snapshot taken no earlier than {@code sinceEpochNs} (DIAGNOSIS.md
   * §3, "Windows that stand for snapshots"): alive and heard from, and their newest heartbeat, sent at or after
   * that time by their own clock, said every record of their ring had reached the daemon before it.
   */
  public Set<Integer> currentWindows(long sinceEpochNs) {
    Set<Integer> current = new HashSet<>();
    synchronized (lock) {
      for (Map.Entry<Integer, RankState> e : ranks.entrySet()) {
        if (e.getValue().windowCurrentSince(sinceEpochNs)) {
          current.add(e.getKey());
        }
      }
    }
    return current;
  }

  /**
   * Asks every connected rank but those of {@code notAsked} for a snapshot; returns the ranks asked, each with the
   * session it was asked on.
   */
  public Map<Integer, String> requestDumps(DumpRequest request, Set<Integer> notAsked) {
    List<RankLink> links = new ArrayList<>();
    Map<Integer, String> asked = new TreeMap<>();
    synchronized (lock) {
      for (Map.Entry<Integer, RankState> e : ranks.entrySet()) {
        if (e.getValue().link != null && !notAsked.contains(e.getKey())) {
          links.add(e.getValue().link);
          asked.put(e.getKey(), e.getValue().session);
        }
      }
    }
    // Sent outside the lock: a slow stream must not hold up the job.
    for (RankLink link : links) {
      link.requestDump(request);
    }
    return asked;
  }

  /**
   * Builds the analysis input: fresh dump replies where they arrived, the stored window otherwise.
   *
   * @param replies dump replies by rank (ranks absent from it did not answer)
   */
  public JobEvidence evidence(Map<Integer, DumpReply> replies, long observedAtNs, Duration stallThreshold,
      String noReplyReason) {
    return evidence(replies, Set.of(), observedAtNs, stallThreshold, noReplyReason);
  }

  /**
   * The analysis input as above, where the windows of {@code standIns} (ranks of {@link #currentWindows}) stand for
   * the snapshots they did not send.
   */
  public JobEvidence evidence(Map<Integer, DumpReply> replies, Set<Integer> standIns, long observedAtNs,
      Duration stallThreshold, String noReplyReason) {
    // One hold of the lock for all ranks: taken rank by rank, each take waited behind the thousands of transport
    // threads whose heartbeats queue for it (16,384 ranks: 10 s to build the evidence instead of 2-4 s).
    synchronized (lock) {
      // Built on every core while this thread holds the lock (writers wait, and the ranks' states are only read):
      // each rank's records are rebuilt from its window, a million at 16,384 ranks.
      List<RankEvidence> out = List.copyOf(ranks.entrySet()).parallelStream()
          .map(e -> e.getValue().evidence(e.getKey(), replies.get(e.getKey()), standIns.contains(e.getKey()),
              noReplyReason))
          .toList();
      return new JobEvidence(id, worldSize, out, observedAtNs, stallThreshold, List.copyOf(contexts.values()));
    }
  }

  /**
   * Builds every rank's records from its window ahead of an incident that may come (DIAGNOSIS.md §3, "Evidence built
   * ahead"): a hung rank's window no longer changes, so the incident's evidence finds them built. Returns how many
   * ranks' windows were looked at.
   */
  public int prepareEvidence() {
    synchronized (lock) {
      // On every core, as evidence() does, and for the same reason: writers wait while this thread holds the lock.
      List<RankState> withWindows = ranks.values().stream().filter(r -> r.window != null).toList();
      // Read for what the read keeps: the records built, and the list the incident's read then returns as it is.
      withWindows.parallelStream().forEach(r -> r.window.records());
      return withWindows.size();
    }
  }

  /**
   * Why this job needs a diagnosis now, or null, for a daemon whose intake is {@code intakeLagNanos} behind (see
   * {@link Incident#trigger}).
   */
  public Report.Trigger incidentTrigger(long nowNanos, long intakeLagNanos, Duration stallTimeout,
      Duration heartbeatTimeout, Duration lostGrace) {
    synchronized (lock) {
      return incident.trigger(ranks.values(), nowNanos, intakeLagNanos, stallTimeout, heartbeatTimeout, lostGrace);
    }
  }

  /** See {@link Incident#quietAtLastCheckNanos}. */
  public long quietAtLastCheckNanos() {
    synchronized (lock) {
      return incident.quietAtLastCheckNanos();
    }
  }

  /** Opens an incident for {@code trigger}; the events that led to it are part of it. */
  public void openIncident(Report.Trigger trigger) {
    synchronized (lock) {
      incident.open(trigger, ranks.values());
    }
  }

  /** The open incident's report is written. */
  public void incidentReported(long nowNanos) {
    synchronized (lock) {
      incident.reported(nowNanos);
    }
  }

  /** See {@link Incident#closeAfterReport}. */
  public void closeIncidentAfterReport(long nowNanos, Duration quiet) {
    synchronized (lock) {
      incident.closeAfterReport(ranks.values(), nowNanos, quiet);
    }
  }

  /** See {@link Incident#closeIfRecovered}. */
  public void closeIncidentIfRecovered(long sinceNanos) {
    synchronized (lock) {
      incident.closeIfRecovered(ranks.values(), sinceNanos);
    }
  }

  /** See {@link Incident#joinOrClaimOnDemand}. */
  public CompletableFuture<Report> joinOrClaimOnDemand(long nowNanos, Duration interval,
      CompletableFuture<Report> candidate, Runnable admission) {
    synchronized (lock) {
      return incident.joinOrClaimOnDemand(id, nowNanos, interval, candidate, admission);
    }
  }

  public boolean incidentOpen() {
    synchronized (lock) {
      return incident.isOpen();
    }
  }

  /**
   * What a node's NCCL logs and counters say; replaces that node's earlier post.
   *
   * @throws LimitExceededException when the job's node context would exceed its byte limit
   */
  public void context(NodeContext node, long nowNanos) {
    synchronized (lock) {
      NodeContext before = contexts.get(node.getHostname());
      long bytes = contextBytes - (before == null ? 0 : before.getSerializedSize()) + node.getSerializedSize();
      if (bytes > maxContextBytes) {
        throw new LimitExceededException("node context of job " + id + " would reach " + bytes
            + " bytes, more than its limit of " + maxContextBytes);
      }
      contexts.put(node.getHostname(), node);
      contextBytes = bytes;
      lastActivityNanos = nowNanos;
    }
  }

  /**
   * True when nothing keeps the job: no rank connected, no incident open, and nothing heard for {@code expiry}.
   * Its reports stay in the store.
   */
  public boolean idle(long nowNanos, Duration expiry) {
    synchronized (lock) {
      return !incident.isOpen() && ranks.values().stream().noneMatch(Job::live)
          && nowNanos - lastActivityNanos >= expiry.toNanos();
    }
  }

  /** Records the ranks say their rings overwrote before shipping them, summed over the job's ranks. */
  public long droppedRecords() {
    synchronized (lock) {
      return ranks.values().stream().mapToLong(r -> r.droppedRecords).sum();
    }
  }

  public void reportWritten(String reportId) {
    synchronized (lock) {
      latestReportId = reportId;
    }
  }

  public JobSummary summary() {
    synchronized (lock) {
      int connected = 0;
      int lost = 0;
      int finished = 0;
      for (RankState r : ranks.values()) {
        switch (r.liveness) {
          case ALIVE -> connected++;
          case LOST -> lost++;
          case FINISHED -> finished++;
          default -> { }
        }
      }
      return JobSummary.newBuilder().setJobId(id).setWorldSize(worldSize).setRanksConnected(connected)
          .setRanksLost(lost).setRanksFinished(finished).setIncidentOpen(incident.isOpen())
          .setLatestReportId(latestReportId).setFirstSeenMs(firstSeenMs).build();
    }
  }

  public List<RankStatus> rankStatuses() {
    synchronized (lock) {
      List<RankStatus> out = new ArrayList<>(ranks.size());
      for (Map.Entry<Integer, RankState> e : ranks.entrySet()) {
        RankState r = e.getValue();
        out.add(RankStatus.newBuilder().setGlobalRank(e.getKey()).setHostname(r.identity.getHostname())
            .setPid(r.identity.getPid()).setLiveness(switch (r.liveness) {
              case ALIVE -> RankStatus.Liveness.CONNECTED;
              case LOST -> RankStatus.Liveness.LOST;
              case FINISHED -> RankStatus.Liveness.FINISHED;
              case UNKNOWN, UNRESPONSIVE -> RankStatus.Liveness.LIVENESS_UNSPECIFIED;
            }).setLastSeenMs(r.lastSeenMs).setDroppedRecords(r.droppedRecords).build());
      }
      return out;
    }
  }
}
