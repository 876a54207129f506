package dev.frdiag.agent;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.collector.reporter.RankStream;
import dev.frdiag.proto.FrdiagVersion;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.Goodbye;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupUpdate;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.ThreadStacks;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.readers.pytorch.NotAStackDumpException;
import dev.frdiag.readers.pytorch.StackDumpReader;
import dev.frdiag.readers.pytorch.WatchdogLine;
import io.grpc.Channel;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the agent knows of one local rank and tells the daemon for it: its stream, the events of its training log,
 * its dump file, and the dump requests it is serving.
 *
 * <p>Everything but {@link #onDumpRequest} runs under the agent's lock, on the agent's thread or in
 * {@link NodeAgent#close}.
 */
final class LocalRank implements RankStream.Listener {
  private static final StackDumpReader STACKS = StackDumpReader.create();
  // The agent's logger, so operators keep finding these lines under the name they always had.
  private static final Logger log = LoggerFactory.getLogger(NodeAgent.class);
  /** Dump requests a rank keeps at once; the daemon sends one per incident. */
  static final int MAX_PENDING_REQUESTS = 16;

  final int rank;
  private final AgentSettings settings;
  /** The agent's lock. */
  private final Object lock;
  private final Clock clock;
  private final Runnable investigating;
  private final Runnable wake;
  /** A concurrent queue rather than the lock: gRPC threads fill it and must not wait for a tick to finish. */
  private final ArrayBlockingQueue<DumpRequest> requests = new ArrayBlockingQueue<>(MAX_PENDING_REQUESTS);
  /** Every local rank of the node, this one included; grows when discovery finds ranks, under the lock. */
  @GuardedBy("lock")
  private final Map<Integer, LocalRank> node;
  @GuardedBy("lock")
  private final RankStream stream;
  @GuardedBy("lock")
  private final RankEvents events;
  @GuardedBy("lock")
  private final DumpFile dump;
  @GuardedBy("lock")
  private final DumpTrigger trigger;
  @GuardedBy("lock")
  private final RankProgress progress;
  @GuardedBy("lock")
  private List<ProcessGroup> announced = List.of();
  /** The pid the current stream's hello named. */
  @GuardedBy("lock")
  private long helloPid;
  @GuardedBy("lock")
  private boolean unshipped;
  /** The newest record id sent by {@link #shipNew}; -1 before any. */
  @GuardedBy("lock")
  private long shippedUpTo = -1;
  @GuardedBy("lock")
  private long lastHeartbeatNanos;
  @GuardedBy("lock")
  private boolean heartbeatSent;
  /** The rank's process; 0 while unknown (ranks listed by hand). A restart changes it. */
  @GuardedBy("lock")
  private long pid;
  /** LOCAL_RANK; -1 when unknown. */
  @GuardedBy("lock")
  private int localRank;
  /** Where the job runs as its scheduler names it, for the Hello. */
  @GuardedBy("lock")
  private Map<String, String> scheduler;

  /**
   * @param settings the agent's settings, with the job's world size
   * @param localRank LOCAL_RANK, -1 when unknown
   * @param pid the rank's process, 0 when unknown
   * @param scheduler the scheduler's names for the job (may be empty)
   * @param lock the agent's lock, held by every caller but gRPC's
   * @param node every local rank of the node by global rank; read under the lock
   * @param investigating told on a gRPC thread that the daemon asked for a dump
   * @param wake told on a gRPC thread that a request waits to be served
   * @param progress the rank's live progress and pid, and its worker server's snapshots
   */
  LocalRank(int rank, int localRank, long pid, Map<String, String> scheduler, AgentSettings settings,
      Channel channel, DumpReader reader, Clock clock, Object lock,
      Map<Integer, LocalRank> node, Runnable investigating, Runnable wake, RankProgress progress) {
    this.rank = rank;
    this.localRank = localRank;
    this.pid = pid;
    this.scheduler = Map.copyOf(scheduler);
    this.settings = settings;
    this.lock = lock;
    this.clock = clock;
    this.node = node;
    this.investigating = investigating;
    this.wake = wake;
    this.progress = progress;
    this.events = new RankEvents(rank, settings.stream().maxQueuedEvents(), clock);
    this.dump = new DumpFile(rank, settings, reader);
    this.trigger = new DumpTrigger(rank, settings, clock);
    this.stream = new RankStream(channel, settings.stream(), "agent rank " + rank, this);
  }

  @Override
  @GuardedBy("lock")
  public RankMessage hello() {
    // A new stream: what the old one carried is sent again. Requests of the old stream are dropped: the daemon
    // that sent them is gone or has given up on them, and a restarted daemon numbers its requests anew.
    requests.clear();
    trigger.clear();
    FlightRecorderDump last = dump.last();
    unshipped = last != null;
    // Discovery names the process from its environment; otherwise the worker server's listener does.
    helloPid = pid > 0 ? pid : progress.pid();
    return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
        .setJobId(settings.jobId()).setGlobalRank(rank).setWorldSize(settings.worldSize())
        .setLocalRank(localRank).setPid(helloPid).setHostname(settings.hostname()).setCudaDevice(-1)
        .setFrdiagVersion(FrdiagVersion.current()).setFrameworkVersion("torch").setNcclVersion(
            last == null ? "" : last.commLibVersion()))
        .addAllProcessGroups(announced).setRingCapacity(0).putAllScheduler(scheduler)).build();
  }

  @Override
  public void onDumpRequest(DumpRequest request) {
    investigating.run();
    if (!requests.offer(request)) {
      log.warn("rank {}: {} dump requests already pending, request {} dropped", rank, MAX_PENDING_REQUESTS,
          request.getRequestId());
      return;
    }
    wake.run();
  }

  /** Ranks in the job this rank belongs to. */
  int worldSize() {
    return settings.worldSize();
  }

  /** The process this rank's stream speaks for; 0 when unknown. */
  @GuardedBy("lock")
  long pid() {
    return pid;
  }

  /** The pid the rank's current hello announced; 0 when none was known. */
  @GuardedBy("lock")
  long announcedPid() {
    return helloPid;
  }

  /**
   * The rank now runs as {@code newPid} (an elastic restart: same rank, new process). The stream ends with a
   * goodbye and starts over on the next tick, so
   * its Hello carries the new pid, which tells the daemon the old process's ring is history; the old process's
   * last dump is forgotten for the same reason.
   *
   * @return true when the process changed
   */
  @GuardedBy("lock")
  boolean follow(long newPid, int newLocalRank, Map<String, String> newScheduler, long nowNanos) {
    if (newPid == pid) {
      return false;
    }
    log.info("rank {}: now process {} (was {})", rank, newPid, pid);
    pid = newPid;
    localRank = newLocalRank;
    scheduler = Map.copyOf(newScheduler);
    dump.forget();
    unshipped = false;
    // A goodbye, not a dropped stream: a restart is not a lost rank, and must not open an incident.
    takeRequests(nowNanos);
    trigger.refuseAll("rank " + rank + " restarted as process " + newPid,
        reply -> stream.send(RankMessage.newBuilder().setDumpReply(reply).build()));
    stream.finish(RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder()
        .setReason("process restarted as " + newPid)).build());
    return true;
  }

  /** True while the daemon has welcomed this rank's stream. */
  @GuardedBy("lock")
  boolean isWelcomed() {
    return stream.isWelcomed();
  }

  /** Drops the stream after a failure of the agent's own; the next tick starts over, resending what it knows. */
  @GuardedBy("lock")
  void reset(String why, Throwable cause, long nowNanos) {
    stream.reset(why, cause, nowNanos);
  }

  /** One of this rank's watchdog lines. */
  @GuardedBy("lock")
  void onLine(WatchdogLine line, Path source) {
    events.onLine(line, source);
  }

  /** Moves the stream along, takes new requests, reads a new dump, and sends what is due. */
  @GuardedBy("lock")
  void tick(long nowNanos, boolean pollFiles) {
    if (!progress.ready()) {
      // The hello names the rank's pid, which the first answer of its worker server tells.
      return;
    }
    if (stream.isWelcomed() && pid <= 0 && progress.pid() != helloPid) {
      // A (new) process serves this rank: the daemon learns its pid from a new hello.
      stream.reset("rank " + rank + " is process " + progress.pid() + " now", null, nowNanos);
    }
    boolean open = stream.poll(nowNanos);
    takeRequests(nowNanos);
    RankProgress.Snapshot snapshot = progress.takeSnapshot();
    if (snapshot != null) {
      took(snapshot);
    }
    FlightRecorderDump recent = progress.takeRecords();
    if (trigger.isEmpty() && progress.pipeDumpDue(nowNanos)) {
      // A pending request's pipe write makes the rank dump anyway; that dump serves progress too.
      progress.pipeDumpWritten(nowNanos, clock.millis(), DumpTrigger.writePipe(settings.pipe(rank)));
    }
    if ((pollFiles || !trigger.isEmpty()) && dump.lookAt(this::peerDumps)) {
      unshipped = true;
      progress.dumpRead(dump.last(), dump.lastModifiedMillis(), nowNanos);
    }
    if (!open) {
      // Replies can only go on a stream; a request whose answer fell due meanwhile is no longer awaited.
      trigger.expire(nowNanos);
      return;
    }
    if (unshipped) {
      ship();
    } else if (recent != null) {
      shipNew(recent);
    }
    while (!events.isEmpty() && stream.isReady()) {
      stream.send(RankMessage.newBuilder().setEvent(events.next()).build());
    }
    trigger.answer(nowNanos, dump, reply -> stream.send(RankMessage.newBuilder().setDumpReply(reply).build()));
    // Progress goes out as soon as a fresh answer gives it, and only once: heartbeats between answers carry none.
    RankProgress.Reading reading = progress.takeFresh(nowNanos);
    if (reading != null) {
      announce(reading.groups());
    }
    if (reading != null || !heartbeatSent
        || nowNanos - lastHeartbeatNanos >= settings.stream().heartbeatInterval().toNanos()) {
      heartbeatSent = true;
      lastHeartbeatNanos = nowNanos;
      Heartbeat.Builder heartbeat = Heartbeat.newBuilder().setSentAtNs(clock.millis() * 1_000_000L);
      if (reading != null) {
        heartbeat.addAllProgress(reading.progress());
      }
      stream.send(RankMessage.newBuilder().setHeartbeat(heartbeat).build());
    }
  }

  /** Says goodbye; pending requests get an error, so the daemon need not wait out its deadline. */
  @GuardedBy("lock")
  void stop(long nowNanos) {
    if (stream.isWelcomed()) {
      takeRequests(nowNanos);
      trigger.refuseAll("the node agent is stopping",
          reply -> stream.send(RankMessage.newBuilder().setDumpReply(reply).build()));
      while (!events.isEmpty()) {
        stream.send(RankMessage.newBuilder().setEvent(events.next()).build());
      }
    }
    trigger.clear();
    stream.finish(RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("node agent stopped"))
        .build());
  }

  @GuardedBy("lock")
  private void takeRequests(long nowNanos) {
    DumpRequest request;
    while ((request = requests.poll()) != null) {
      trigger.add(request, nowNanos, progress::askSnapshot);
    }
  }

  /** What the worker server gave for a snapshot: the rank's last dump from now on, or why there is none. */
  @GuardedBy("lock")
  private void took(RankProgress.Snapshot snapshot) {
    if (snapshot.dump() == null) {
      trigger.serverFailed(snapshot.problem());
      return;
    }
    long now = clock.millis();
    dump.took(snapshot.dump(), now, snapshot.stacks() == null ? ThreadStacks.getDefaultInstance()
        : stacks(snapshot.stacks(), now));
    unshipped = true;
  }

  /** The worker server's answer read as stacks, or, when it is none (py-spy missing), why not. */
  private ThreadStacks stacks(RankProgress.Stacks answer, long atMillis) {
    try {
      return STACKS.parse(answer.text(), answer.handler()).toBuilder().setTakenAtNs(atMillis * 1_000_000L).build();
    } catch (NotAStackDumpException e) {
      log.info("rank {}: its worker server's {} gave no stacks: {}", rank, answer.handler(), e.getMessage());
      return ThreadStacks.newBuilder().setSource(answer.handler()).setError(e.getMessage()).build();
    }
  }

  /** The last dumps of the node's other ranks, which help tell which groups' pg_status counts P2P seqs. */
  @GuardedBy("lock")
  private List<FlightRecorderDump> peerDumps() {
    List<FlightRecorderDump> out = new ArrayList<>();
    for (LocalRank other : node.values()) {
      if (other != this && other.dump.last() != null) {
        out.add(other.dump.last());
      }
    }
    return out;
  }

  /** Tells the daemon of the groups it has not heard of from this rank. */
  @GuardedBy("lock")
  private void announce(List<ProcessGroup> groups) {
    List<ProcessGroup> added = new ArrayList<>(groups);
    added.removeAll(announced);
    if (!added.isEmpty()) {
      stream.send(RankMessage.newBuilder().setProcessGroups(ProcessGroupUpdate.newBuilder()
          .addAllProcessGroups(added)).build());
      List<ProcessGroup> all = new ArrayList<>(announced);
      all.addAll(added);
      announced = List.copyOf(all);
    }
  }

  /**
   * Sends the records of {@code recent} (the whole ring, read between progress polls) newer than any sent before:
   * completed collectives no progress poll carries, for the daemon's straggler analysis. A ring whose ids went back
   * is a new process's: it is sent whole.
   */
  @GuardedBy("lock")
  private void shipNew(FlightRecorderDump recent) {
    long newest = recent.records().stream().mapToLong(CollectiveRecord::getRecordId).max().orElse(-1);
    long since = newest < shippedUpTo ? -1 : shippedUpTo;
    List<CollectiveRecord> fresh = recent.records().stream().filter(r -> r.getRecordId() > since).toList();
    shippedUpTo = Math.max(newest, since);
    if (fresh.isEmpty()) {
      return;
    }
    announce(recent.processGroups());
    ReplyBuilder.batches(new FlightRecorderDump(recent.file(), recent.rank(), recent.version(),
        recent.commLibVersion(), recent.processGroups(), fresh, recent.progress(), recent.frames(),
        recent.warnings()), settings.stream().maxBatchRecords(),
        batch -> stream.send(RankMessage.newBuilder().setRecords(batch).build()));
  }

  /** Announces the dump's new groups, then sends its records in batches, so the daemon's window is current. */
  @GuardedBy("lock")
  private void ship() {
    unshipped = false;
    FlightRecorderDump last = dump.last();
    announce(last.processGroups());
    ReplyBuilder.batches(last, settings.stream().maxBatchRecords(),
        batch -> stream.send(RankMessage.newBuilder().setRecords(batch).build()));
  }
}
