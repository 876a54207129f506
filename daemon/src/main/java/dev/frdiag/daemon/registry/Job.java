package dev.frdiag.daemon.registry;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankStatus;
import dev.frdiag.proto.v1.RecordBatch;
import java.time.Duration;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.IntFunction;

/**
 * One training job as the daemon tracks it: its ranks, their latest progress and ring windows, its {@link Incident}
 * and its {@link Stragglers} watch. Thread-safe: every method holds the job's own lock, which its incident and
 * straggler watch hold too, so jobs never block each other.
 */
public final class Job {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(Job.class);

  private final String id;
  private final int window;
  private final Object lock = new Object();
  /** Each rank's state is guarded by {@link #lock} as well. */
  @GuardedBy("lock")
  private final Ranks ranks;
  private final long firstSeenMs;
  /** Its incident's whole life, and the on-demand diagnosis running; under {@link #lock}. */
  private final Incident incident;
  /** Its straggler watch; under {@link #lock}. */
  private final Stragglers stragglers;
  @GuardedBy("lock")
  private String latestReportId = "";
  @GuardedBy("lock")
  private final NodeContexts contexts;
  /** Daemon monotonic time of the last thing heard from or about the job; idle jobs expire from it. */
  @GuardedBy("lock")
  private long lastActivityNanos;
  /**
   * Who may write the job ({@link #admitWriter}): the writers that registered its ranks, each as the access layer
   * names it. At most as many as the ranks that joined, one new writer per rank at most.
   */
  @GuardedBy("lock")
  private final Set<String> writers = new HashSet<>();
  /** The scheduler's names for the job, as its ranks' Hellos gave them; the newest Hello wins a key. */
  @GuardedBy("lock")
  private final Map<String, String> scheduler = new TreeMap<>();

  /** The ranks connected before the daemon restarted, awaited back; under {@link #lock}. */
  private final RestartReturn restart;
  /** The job's part of the daemon's state budget; given back when the job is forgotten. */
  private final StateBudget.Share share;

  Job(String id, int worldSize, int window, dev.frdiag.daemon.settings.Limits limits, StateBudget.Share share,
      OnDemandSlots onDemandSlots, long nowMs, long nowNanos) {
    this.id = id;
    this.share = share;
    this.ranks = new Ranks(id, worldSize, limits.maxGroupsPerRank(), share);
    this.restart = new RestartReturn(id, ranks);
    this.incident = new Incident(id, lock, ranks, restart::awaiting, onDemandSlots);
    this.stragglers = new Stragglers(id, lock, incident);
    this.window = limits.windowFor(window, worldSize);
    this.contexts = new NodeContexts("node context of job " + id, limits.maxContextBytesPerJob(), share);
    this.firstSeenMs = nowMs;
    this.lastActivityNanos = nowNanos;
  }

  public String id() {
    return id;
  }

  /**
   * A rank (re)connected on {@code session}: replaces an earlier stream of the same rank only when that stream is
   * no longer alive (ended, or silent past the heartbeat timeout). From then on only this session speaks for the
   * rank; messages of any other session are ignored. While the job's snapshots are being gathered, the rank is asked
   * on {@code link} (which holds the request until the rank is welcomed): its stream may have been down when the
   * request went out (an agent opens a new stream when it learns the rank's pid), and a request on a stream that is
   * gone is lost, so its stored window would stand in for it, however old.
   *
   * @throws ClaimRefusedException when a live stream holds the rank, or live ranks report another world size
   * @throws LimitExceededException when the rank announces more process groups than the limit
   */
  public void attach(RankIdentity identity, List<ProcessGroup> groups, RankLink link, String session,
      long dropped, long nowNanos, long nowMs) {
    synchronized (lock) {
      ranks.attach(identity, groups, link, session, dropped, nowNanos, nowMs);
      lastActivityNanos = nowNanos;
    }
    int rank = identity.getGlobalRank();
    for (Gather g : incident.gathers()) {
      DumpRequest request = g.expectAgain(rank, session);
      if (request != null) {
        log.info("job={} rank={} asked for its snapshot again on its new stream (request {})", id, rank,
            request.getRequestId());
        link.requestDump(request);
      }
    }
  }

  /**
   * Whether {@code writer} may register ranks of this job or post its node context: the job is bound to the writers
   * that registered its ranks. The first writer binds it; another joins while a rank of the job is connected (the
   * job's other hosts, starting); once none is, only the job's writers may come back, so that nobody else can
   * register an ended job's ranks with a fabricated ring, nor hold its shape and lock the real job out.
   */
  public boolean admitWriter(String writer) {
    synchronized (lock) {
      if (writers.isEmpty() || writers.contains(writer) || ranks.all().stream().anyMatch(RankState::live)) {
        writers.add(writer);
        return true;
      }
      return false;
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
      RankState r = ranks.current(rank, session);
      if (r != null) {
        ranks.addGroups(r, rank, groups);
        heard(r, nowNanos);
      }
    }
  }

  /** True when {@code session} is the stream that speaks for {@code rank} now. */
  public boolean isCurrent(int rank, String session) {
    synchronized (lock) {
      return ranks.current(rank, session) != null;
    }
  }

  /** True when {@code rank} announced a group named {@code name}. */
  public boolean knowsGroup(int rank, String name) {
    synchronized (lock) {
      return ranks.announced(rank).test(name);
    }
  }

  @GuardedBy("lock")
  private void heard(RankState r, long nowNanos) {
    r.heard(nowNanos);
    lastActivityNanos = nowNanos;
  }

  /**
   * A heartbeat the rank sent at {@code sentAtNs} by its own clock (epoch ns; 0 when it did not say): the watchdog
   * measures how long a group has gone without progress between the rank's own send times, so heartbeats that reach
   * the daemon late do not look like a stall. It may say every record of the rank's ring reached the daemon before it
   * ({@code recordsCurrent}): the rank's window is then as current as a snapshot taken at {@code sentAtNs}.
   */
  public void heartbeat(int rank, String session, List<ProcessGroupProgress> progress, long dropped, long sentAtNs,
      boolean recordsCurrent, long nowNanos, long nowMs) {
    synchronized (lock) {
      RankState r = ranks.current(rank, session);
      if (r != null) {
        heard(r, nowNanos);
        ranks.charged(r, StateBudget.State.PROGRESS, r.progressGrowth(progress),
            () -> r.heartbeat(progress, dropped, sentAtNs, recordsCurrent, nowNanos, nowMs));
      }
    }
  }

  /**
   * Takes in a batch of {@code rank}'s records on {@code session}: its new templates kept in {@code templates} (the
   * stream's own table), every template and record checked against it and the groups the rank announced. Nothing is
   * taken in from a batch that fails a check, nor from a stream that no longer speaks for the rank.
   *
   * @throws IllegalArgumentException describing the batch's first malformed template or record
   */
  public void records(int rank, String session, RecordBatch batch, TemplateTable templates, long nowNanos) {
    synchronized (lock) {
      RankState r = ranks.records(rank, session, batch, templates, window);
      if (r != null) {
        heard(r, nowNanos);
      }
    }
  }

  /**
   * Takes {@code rank}'s snapshot {@code reply}, sent on {@code session}, into the gather of the incident that asked
   * for it, as the gather keeps it: its newest {@link #window} records (a rank that ignores the request's
   * {@code max_records}, an older client, must not make the daemon hold its whole ring for every rank of a large job),
   * checked against the templates it carries and the groups the rank announced, and shared with the job's kept
   * records ({@link RecordInterner#shared(DumpReply, IntFunction)}). A late or unknown reply is checked but dropped:
   * sharing its records with the job's would only take time from the analysis it missed. So is a reply from a
   * stream other than the one asked: only the rank's own session may answer for it.
   *
   * @throws IllegalArgumentException describing the reply's first malformed template or record
   */
  public void dumpReply(int rank, String session, DumpReply reply) {
    DumpReply newest = Ranks.newest(reply, window);
    DumpReply kept;
    if (newest.getRecordsCount() == 0 && newest.getTemplatesCount() == 0 && newest.getFramesCount() == 0) {
      // Nothing to check or share (a reply whose records are on the stream): no need to wait for the job's lock.
      kept = newest;
    } else {
      boolean keep = incident.gatherOf(reply.getRequestId()) != null;
      synchronized (lock) {
        kept = ranks.snapshot(rank, newest, keep);
      }
    }
    // Looked up again: the gather may have ended while the reply was taken in.
    Gather g = incident.gatherOf(reply.getRequestId());
    if (kept != null && g != null) {
      g.add(rank, session, kept);
    }
  }

  public void event(int rank, String session, RankEvent event, long nowNanos) {
    synchronized (lock) {
      RankState r = ranks.current(rank, session);
      if (r != null) {
        heard(r, nowNanos);
        ranks.charged(r, StateBudget.State.RANKS, StateBytes.message(event), () -> r.event(event));
      }
    }
  }

  /** The rank said Goodbye. */
  public void finished(int rank, String session) {
    synchronized (lock) {
      RankState r = ranks.current(rank, session);
      if (r != null) {
        r.finished();
      }
    }
  }

  /** The rank's stream ended without Goodbye (or its heartbeats stopped): its process is presumed gone. */
  public void lost(int rank, String session, long nowNanos) {
    synchronized (lock) {
      RankState r = session == null ? ranks.get(rank) : ranks.current(rank, session);
      if (r != null) {
        r.lost(nowNanos);
      }
    }
  }

  /**
   * Records kept per rank: the daemon's window, or less for a job so large that its ranks would hold more than the
   * job's share ({@link dev.frdiag.daemon.settings.Limits#windowFor}). Snapshot replies are asked for and kept to this too.
   */
  public int window() {
    return window;
  }

  /** Whether a rank of this job announced a group equal to {@code group} (members, layout, name) and it was kept. */
  public boolean holdsGroup(ProcessGroup group) {
    synchronized (lock) {
      return ranks.holds(group);
    }
  }

  /**
   * The connected ranks whose window stands for a snapshot taken no earlier than {@code sinceEpochNs} (DIAGNOSIS.md
   * §3, "Windows that stand for snapshots"): alive and heard from, and their newest heartbeat, sent at or after
   * that time by their own clock, said every record of their ring had reached the daemon before it.
   */
  public Set<Integer> currentWindows(long sinceEpochNs) {
    synchronized (lock) {
      return ranks.currentWindows(sinceEpochNs);
    }
  }

  /**
   * Asks every connected rank but those of {@code notAsked} for a snapshot; returns the ranks asked, each with the
   * session it was asked on.
   */
  public Map<Integer, String> requestDumps(DumpRequest request, Set<Integer> notAsked) {
    List<RankLink> links;
    Map<Integer, String> asked = new TreeMap<>();
    synchronized (lock) {
      links = ranks.links(notAsked, asked);
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
      return new JobEvidence(id, ranks.worldSize(), ranks.evidence(replies, standIns, noReplyReason), observedAtNs,
          stallThreshold, contexts.all());
    }
  }

  /**
   * Builds every rank's records from its window ahead of an incident that may come (DIAGNOSIS.md §3, "Evidence built
   * ahead"): a hung rank's window no longer changes, so the incident's evidence finds them built. Returns how many
   * ranks' windows were looked at.
   */
  public int prepareEvidence() {
    synchronized (lock) {
      return ranks.buildWindows();
    }
  }

  /**
   * The ranks that were connected, as {@code identities} say, when the daemon stopped, and the writers the job was
   * bound to ({@link #admitWriter}): the job is not judged
   * (DIAGNOSIS.md §3, "After a restart") until they are back or {@code untilNanos} has passed. A rank that cannot be
   * held (the job's or the daemon's state limit) is left out.
   */
  public void expectBack(List<RankIdentity> identities, java.util.Collection<String> writers, long untilNanos) {
    synchronized (lock) {
      // Bound as it was: whoever reaches the restarted daemon first must not take the job from its ranks.
      this.writers.addAll(writers);
      restart.expect(identities, untilNanos);
    }
  }

  /**
   * Whether ranks connected before the daemon restarted are still expected back at {@code nowNanos}: no verdict is
   * made on the job until they are. Once their time has passed, those not back are lost (or, when none came back at
   * all, the job ended while the daemon was away and they finished).
   */
  public boolean awaitingReturn(long nowNanos) {
    synchronized (lock) {
      return restart.awaiting(nowNanos);
    }
  }

  /** The ranks connected now and those expected back, as they said who they are; sorted by rank. */
  public List<RankIdentity> connected() {
    synchronized (lock) {
      return ranks.connected();
    }
  }

  /** A digest of {@link #connected}, the world size and the job's writers, to tell cheaply whether any changed. */
  public long connectedDigest() {
    synchronized (lock) {
      return ranks.connectedDigest() * 31 + writers.hashCode();
    }
  }

  /** The writers the job is bound to ({@link #admitWriter}), sorted. */
  public List<String> writers() {
    synchronized (lock) {
      return writers.stream().sorted().toList();
    }
  }

  /** The job's world size, as its ranks last said. */
  public int worldSize() {
    synchronized (lock) {
      return ranks.worldSize();
    }
  }

  /** The job's incident: its whole life, from the watch before it opens to its report and close. */
  public Incident incident() {
    return incident;
  }

  /** The job's straggler watch. */
  public Stragglers stragglers() {
    return stragglers;
  }

  /**
   * What a node's NCCL logs and counters say; replaces that node's earlier post.
   *
   * @throws LimitExceededException when the job's node context would exceed its byte limit
   */
  public void context(NodeContext node, long nowNanos) {
    synchronized (lock) {
      contexts.put(node);
      lastActivityNanos = nowNanos;
    }
  }

  /**
   * True when nothing keeps the job: no rank connected, no incident open, and nothing heard for {@code expiry}.
   * Its reports stay in the store.
   */
  public boolean idle(long nowNanos, Duration expiry) {
    synchronized (lock) {
      return !incident.isOpen() && ranks.all().stream().noneMatch(RankState::live) && !restart.awaiting(nowNanos)
          && nowNanos - lastActivityNanos >= expiry.toNanos();
    }
  }

  /**
   * Since when (daemon monotonic time of the last thing heard) nothing keeps the job: no rank connected, no incident
   * open; -1 while something does.
   */
  public long idleSinceNanos(long nowNanos) {
    synchronized (lock) {
      return idle(nowNanos, Duration.ZERO) ? lastActivityNanos : -1;
    }
  }

  /** Gives back the bytes the job holds to the daemon's budget, and ends its incident: it is forgotten. */
  void release() {
    incident.expire();
    share.close();
  }

  /** The bytes of client state the job holds, as {@link StateBudget} counts them. */
  public long stateBytes() {
    return share.used();
  }

  /** Records the ranks say their rings overwrote before shipping them, summed over the job's ranks. */
  public long droppedRecords() {
    synchronized (lock) {
      return ranks.all().stream().mapToLong(RankState::droppedRecords).sum();
    }
  }

  public void reportWritten(String reportId) {
    synchronized (lock) {
      latestReportId = reportId;
    }
  }

  public JobSummary summary() {
    synchronized (lock) {
      return ranks.counted(JobSummary.newBuilder().setJobId(id)).setIncidentOpen(incident.isOpen())
          .setLatestReportId(latestReportId).setFirstSeenMs(firstSeenMs).build();
    }
  }

  public List<RankStatus> rankStatuses() {
    synchronized (lock) {
      return ranks.statuses();
    }
  }
}
