package dev.frdiag.agent;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.agent.controlplane.ControlPlaneException;
import dev.frdiag.agent.controlplane.Recorder;
import dev.frdiag.agent.controlplane.WorkerServer;
import dev.frdiag.agent.discovery.ProcessFinder;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.readers.pytorch.DumpFormatException;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.nio.file.Path;
import java.util.EnumMap;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rank's live progress: how far each of its process groups has enqueued and completed, from fresh answers
 * only. The rank's worker server is asked which handlers it has ({@code GET /handler/}) once per process, and again
 * after a failed request; then, at the progress interval, every Flight Recorder it serves ({@link Recorder}: the
 * NCCL one, the generic one gloo records into, or both) for its active entries, merged into one reading. When it
 * does not answer and periodic pipe dumps are enabled, the agent makes the rank dump through its debug pipe
 * instead, and the dump's pg_status is the answer.
 *
 * <p>When the daemon asks for a snapshot, the same recorders are read whole ({@link #askSnapshot}), with the
 * rank's Python stacks when the server has a handler for them.
 *
 * <p>A reading is handed on once: heartbeats between fresh answers carry no progress, so a rank that stops
 * answering stops advancing in the daemon's eyes (its last reported counts keep the time they last advanced), and
 * a stale answer is never sent again as if it were current.
 *
 * <p>{@link #poll} and the snapshots run on poller threads, one at a time; the rest under the agent's lock. What
 * they share is atomic or volatile.
 */
final class RankProgress {
  // The agent's logger, so operators keep finding these lines under the name they always had.
  private static final Logger log = LoggerFactory.getLogger(NodeAgent.class);
  /** How often a pid is looked for again while none is found: each look lists every process's open files. */
  static final long PID_RETRY_NANOS = TimeUnit.SECONDS.toNanos(10);

  /**
   * What one fresh answer said.
   *
   * @param groups the rank's process groups the answer names
   * @param progress per group, the last enqueued and completed seqs
   * @param atNanos when it was read (monotonic)
   * @param maxAgeNanos how old it may be when sent; older, it is not current any more
   */
  record Reading(List<ProcessGroup> groups, List<ProcessGroupProgress> progress, long atNanos, long maxAgeNanos) {
    Reading {
      groups = List.copyOf(groups);
      progress = List.copyOf(progress);
    }
  }

  /**
   * What a snapshot request got from the worker server.
   *
   * @param dump every entry of the rank's recorders, merged; null when none came
   * @param problem why no dump came; null when one did
   * @param stacks the rank's Python stacks; null when none came
   */
  record Snapshot(FlightRecorderDump dump, String problem, Stacks stacks) {}

  /**
   * A rank's Python stacks as its worker server printed them.
   *
   * @param handler the handler that printed them ({@link WorkerServer#PYSPY} or {@link WorkerServer#TRACEBACK})
   */
  record Stacks(String handler, String text) {}

  private final int rank;
  private final AgentSettings settings;
  private final WorkerServer server;
  private final DumpReader reader;
  private final ProcessFinder finder;
  private final LongSupplier nanoTime;
  /** Runs snapshots off the agent's thread; null when the rank has no worker server. */
  private final Executor poller;
  /** Told on a poller thread that a snapshot came. */
  private final Runnable wake;
  private final Path socket;
  /**
   * How often the whole ring is read besides the progress polls (every poll when they are further apart), its new
   * records shipped: the daemon's straggler analysis needs every rank's recent collectives, which the active
   * entries a progress poll reads do not hold once completed.
   */
  static final Duration RECORDS_INTERVAL = Duration.ofSeconds(10);

  /** One request to the worker server at a time, so a snapshot never interleaves with a poll. */
  private final Object pollLock = new Object();
  /** The handlers the worker server listed; null until listed, and after a request failed. */
  @GuardedBy("pollLock")
  private List<String> handlers;
  /** The process whose server listed {@link #handlers}; a new process is asked again. */
  @GuardedBy("pollLock")
  private long handlersPid;
  /** What was last said of the handlers, so a server is described once, not per poll. */
  @GuardedBy("pollLock")
  private String saidHandlers;
  @GuardedBy("pollLock")
  private RecorderMerge merge = new RecorderMerge();
  /** Whether the last request got a dump from a recorder: then snapshots are asked of the server. */
  private volatile boolean recording;
  /** The snapshot not yet taken. */
  private final AtomicReference<Snapshot> snapshot = new AtomicReference<>();
  /** The whole ring read for its new records, not yet taken. */
  private final AtomicReference<FlightRecorderDump> records = new AtomicReference<>();
  /** Polls since the whole ring was last read for its new records. */
  @GuardedBy("pollLock")
  private long pollsSinceRecords = Long.MAX_VALUE / 2;
  /** The latest reading not yet sent; taken once. */
  private final AtomicReference<Reading> fresh = new AtomicReference<>();
  /** Whether the worker server answered its last request; false before the first. */
  private volatile boolean answering;
  /** Whether the worker server was asked at least once (or there is none to ask). */
  private volatile boolean asked;
  /** The rank's process, 0 while not known. */
  private volatile long pid;
  /** Poller thread only. */
  private String lastProblem;
  /**
   * The last answer that held entries: its seqs tell which groups' pg_status counts P2P work when a later answer
   * has no active entries to tell by.
   */
  private FlightRecorderDump lastWithEntries;
  private long pidLookedForNanos;
  private boolean pidLooked;
  /** Agent thread only: when the pipe was last written for progress (monotonic and epoch ms). */
  private long pipeDumpNanos;
  private long pipeDumpMillis = Long.MAX_VALUE;
  private boolean pipeDumped;
  private String lastPipeProblem;

  /**
   * @param poller runs snapshots; null when there is no worker server to ask
   * @param wake told on a poller thread that a snapshot came
   */
  RankProgress(int rank, AgentSettings settings, WorkerServer server, DumpReader reader, ProcessFinder finder,
      LongSupplier nanoTime, Executor poller, Runnable wake) {
    this.rank = rank;
    this.poller = poller;
    this.wake = Objects.requireNonNull(wake, "wake");
    this.settings = Objects.requireNonNull(settings, "settings");
    this.server = Objects.requireNonNull(server, "server");
    this.reader = Objects.requireNonNull(reader, "reader");
    this.finder = Objects.requireNonNull(finder, "finder");
    this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
    this.socket = settings.workerSocket(rank);
    this.asked = socket == null && settings.pipe(rank) == null;
  }

  /**
   * True once the rank was polled once: only then is its pid known as well as it can be, and its stream to the
   * daemon, whose hello names the pid, may start. Thread-safe.
   */
  boolean ready() {
    return asked;
  }

  /** The rank's pid, 0 while not known. Thread-safe. */
  long pid() {
    return pid;
  }

  /**
   * The reading not yet sent, or null; a reading is returned once, and not at all once it is too old to be
   * current (read while the stream to the daemon was down, say). Thread-safe.
   */
  Reading takeFresh(long nowNanos) {
    Reading r = fresh.getAndSet(null);
    return r == null || nowNanos - r.atNanos() > r.maxAgeNanos() ? null : r;
  }

  /**
   * Asks the worker server, if any, for the rank's active entries, and looks for the rank's pid while it is not
   * known; on a poller thread. Never throws.
   */
  void poll() {
    try {
      if (socket != null) {
        synchronized (pollLock) {
          pollWorkerServer();
        }
      }
      Path pipe = settings.pipe(rank);
      if (pipe != null && !answering && !finder.isAlive(pid)) {
        lookForPid(() -> finder.holderOf(pipe));
      }
    } catch (RuntimeException e) {
      log.warn("rank {}: polling it failed: {}", rank, e.toString(), e);
    } finally {
      asked = true;
    }
  }

  @GuardedBy("pollLock")
  private void pollWorkerServer() {
    try {
      List<Recorder> recorders = recorders();
      if (recorders.isEmpty()) {
        answering = false;
        recording = false;
        return;
      }
      FlightRecorderDump dump = read(recorders, true);
      if (!dump.records().isEmpty()) {
        lastWithEntries = dump;
      }
      if (++pollsSinceRecords * settings.progressInterval().toNanos() >= RECORDS_INTERVAL.toNanos()) {
        // The whole ring now and then, so the daemon's window holds the rank's recent collectives as an SDK
        // rank's does: its straggler analysis reads them (docs/DIAGNOSIS.md §13.5).
        pollsSinceRecords = 0;
        records.set(read(recorders, false));
      }
      // Two intervals: one answer may come late, the next one would replace it.
      fresh.set(new Reading(dump.processGroups(), dump.progress(), nanoTime.getAsLong(),
          2 * settings.progressInterval().toNanos()));
      if (!answering) {
        log.info("rank {}: worker server at {} answers; progress is live", rank, socket);
      }
      answering = true;
      recording = true;
      lastProblem = null;
      if (!finder.isAlive(pid)) {
        lookForPid(() -> finder.listenerOf(socket));
      }
    } catch (ControlPlaneException | DumpFormatException e) {
      failed();
      String problem = e.getMessage();
      if (!problem.equals(lastProblem)) {
        lastProblem = problem;
        log.warn("rank {}: no progress from its worker server: {}{}", rank, problem,
            settings.pipeDumpInterval() != null && settings.pipe(rank) != null
                ? "; dumping through its debug pipe every " + settings.pipeDumpInterval() + " instead" : "");
      }
    } catch (RuntimeException e) {
      failed();
      log.warn("rank {}: asking its worker server failed: {}", rank, e.toString(), e);
    }
  }

  /** After a failed request the handlers are listed again: the server may be another process's, or gone. */
  @GuardedBy("pollLock")
  private void failed() {
    answering = false;
    recording = false;
    handlers = null;
  }

  /**
   * The recorders the rank's worker server serves, from its handlers, listed anew for a new process; says which
   * once per change.
   */
  @GuardedBy("pollLock")
  private List<Recorder> recorders() throws ControlPlaneException {
    long now = pid;
    if (handlers == null || handlersPid != now) {
      if (handlers != null && handlersPid != 0 && handlersPid != now) {
        // Another process's recorders number their entries anew.
        merge = new RecorderMerge();
      }
      handlers = server.handlers(socket);
      handlersPid = now;
    }
    List<Recorder> recorders = Recorder.among(handlers);
    String said = recorders.isEmpty()
        ? "rank " + rank + ": the worker server at " + socket + " has handlers " + handlers
            + " but no Flight Recorder handler (" + String.join(", ", Recorder.handlers())
            + "); no progress or snapshot from it"
        : "rank " + rank + ": the worker server at " + socket + " has handlers " + handlers + "; reading "
            + String.join(" and ", recorders.stream().map(r -> r.handler() + " (" + r.description() + ")")
            .toList());
    if (!said.equals(saidHandlers)) {
      saidHandlers = said;
      if (recorders.isEmpty()) {
        log.warn(said);
      } else {
        log.info(said);
      }
    }
    return recorders;
  }

  /** Every recorder's dump, merged, completed with the node's view of groups, and cut to what the daemon takes. */
  @GuardedBy("pollLock")
  private FlightRecorderDump read(List<Recorder> recorders, boolean onlyActive)
      throws ControlPlaneException, DumpFormatException {
    Map<Recorder, FlightRecorderDump> dumps = new EnumMap<>(Recorder.class);
    for (Recorder r : recorders) {
      dumps.put(r, reader.parse(server.dump(socket, r, onlyActive), socket, rank));
    }
    FlightRecorderDump merged = merge.merge(dumps, !onlyActive);
    return DumpFile.usable(rank, settings.worldSize(), merged,
        lastWithEntries == null ? List.of() : List.of(lastWithEntries));
  }

  /**
   * Asks the worker server for a snapshot on a poller thread, when it serves a recorder; {@link #takeSnapshot}
   * gives the answer. Under the agent's lock.
   *
   * @return false when the server cannot give one (none, not answering, no recorder), so the pipe is the way
   */
  boolean askSnapshot() {
    if (socket == null || poller == null || !recording) {
      return false;
    }
    try {
      poller.execute(this::snapshot);
      return true;
    } catch (RejectedExecutionException e) {
      // The agent is closing.
      return false;
    }
  }

  /** The whole ring read for its new records since last taken, or null. Thread-safe. */
  FlightRecorderDump takeRecords() {
    return records.getAndSet(null);
  }

  /** The snapshot that came since last taken, or null. Thread-safe. */
  Snapshot takeSnapshot() {
    return snapshot.getAndSet(null);
  }

  /** The socket the rank's worker server listens on; null when none. */
  Path socket() {
    return socket;
  }

  private void snapshot() {
    Snapshot s;
    synchronized (pollLock) {
      try {
        List<Recorder> recorders = recorders();
        if (recorders.isEmpty()) {
          s = new Snapshot(null, "its worker server at " + socket + " has no Flight Recorder handler", null);
        } else {
          s = new Snapshot(read(recorders, false), null, stacks());
        }
      } catch (ControlPlaneException | DumpFormatException e) {
        failed();
        s = new Snapshot(null, e.getMessage(), null);
      } catch (RuntimeException e) {
        failed();
        log.warn("rank {}: asking its worker server for a snapshot failed: {}", rank, e.toString(), e);
        s = new Snapshot(null, e.toString(), null);
      }
    }
    snapshot.set(s);
    wake.run();
  }

  /**
   * The rank's Python stacks: py-spy's dump when the server lists it and it answers (py-spy on the rank's PATH),
   * else faulthandler's; null when neither came.
   */
  @GuardedBy("pollLock")
  private Stacks stacks() {
    for (String handler : List.of(WorkerServer.PYSPY, WorkerServer.TRACEBACK)) {
      if (handlers == null || !handlers.contains(handler)) {
        continue;
      }
      try {
        return new Stacks(handler, server.stacks(socket, handler));
      } catch (ControlPlaneException e) {
        log.debug("rank {}: no stacks from {}: {}", rank, handler, e.getMessage());
      }
    }
    return null;
  }

  /**
   * True when the rank should be made to dump through its pipe for its progress now: periodic pipe dumps are on,
   * the rank has a pipe, and its worker server (if any) does not answer. Under the agent's lock.
   */
  boolean pipeDumpDue(long nowNanos) {
    if (settings.pipeDumpInterval() == null || settings.pipe(rank) == null || answering || !asked) {
      return false;
    }
    return !pipeDumped || nowNanos - pipeDumpNanos >= settings.pipeDumpInterval().toNanos();
  }

  /**
   * The pipe was written for progress at these times. Under the agent's lock.
   *
   * @param problem why the pipe could not be written; null when it was
   */
  void pipeDumpWritten(long nowNanos, long nowMillis, String problem) {
    if (problem != null && !problem.equals(lastPipeProblem)) {
      log.warn("rank {}: cannot dump it for its progress: {}", rank, problem);
    }
    lastPipeProblem = problem;
    pipeDumped = true;
    pipeDumpNanos = nowNanos;
    pipeDumpMillis = nowMillis;
  }

  /**
   * A dump the agent read from the rank's dump file: fresh progress when written since the pipe was last
   * written for progress, and the worker server does not answer. Under the agent's lock.
   */
  void dumpRead(FlightRecorderDump dump, long modifiedMillis, long nowNanos) {
    if (!answering && pipeDumped && modifiedMillis >= pipeDumpMillis - DumpTrigger.RECENT_DUMP_MILLIS) {
      fresh.set(new Reading(dump.processGroups(), dump.progress(), nowNanos,
          2 * settings.pipeDumpInterval().toNanos()));
    }
  }

  /** Looks for the rank's pid, no more often than every {@link #PID_RETRY_NANOS} while none is found. */
  private synchronized void lookForPid(LongSupplier lookup) {
    long now = nanoTime.getAsLong();
    if (pidLooked && now - pidLookedForNanos < PID_RETRY_NANOS) {
      return;
    }
    pidLooked = true;
    pidLookedForNanos = now;
    long found = lookup.getAsLong();
    if (found > 0 && found != pid) {
      log.info("rank {}: its process is pid {}", rank, found);
      pid = found;
      pidLooked = false;
    }
  }
}
