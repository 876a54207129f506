package dev.frdiag.agent;

import dev.frdiag.agent.controlplane.ControlPlaneException;
import dev.frdiag.agent.controlplane.WorkerServer;
import dev.frdiag.agent.discovery.ProcessFinder;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.readers.pytorch.DumpFormatException;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rank's live progress: how far each of its process groups has enqueued and completed, from fresh answers
 * only. The rank's worker server is asked for its active Flight Recorder entries at the progress interval; when
 * it does not answer and periodic pipe dumps are enabled, the agent makes the rank dump through its debug pipe
 * instead, and the dump's pg_status is the answer.
 *
 * <p>A reading is handed on once: heartbeats between fresh answers carry no progress, so a rank that stops
 * answering stops advancing in the daemon's eyes (its last reported counts keep the time they last advanced), and
 * a stale answer is never sent again as if it were current.
 *
 * <p>{@link #poll} runs on a poller thread, one call at a time; the rest under the agent's lock. What they share
 * is atomic or volatile.
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

  private final int rank;
  private final AgentSettings settings;
  private final WorkerServer server;
  private final DumpReader reader;
  private final ProcessFinder finder;
  private final LongSupplier nanoTime;
  private final Path socket;
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

  RankProgress(int rank, AgentSettings settings, WorkerServer server, DumpReader reader, ProcessFinder finder,
      LongSupplier nanoTime) {
    this.rank = rank;
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
        pollWorkerServer();
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

  private void pollWorkerServer() {
    try {
      byte[] json = server.dumpJson(socket, true);
      FlightRecorderDump dump = DumpFile.usable(rank, settings.worldSize(), reader.parse(json, socket, rank),
          lastWithEntries == null ? List.of() : List.of(lastWithEntries));
      if (!dump.records().isEmpty()) {
        lastWithEntries = dump;
      }
      // Two intervals: one answer may come late, the next one would replace it.
      fresh.set(new Reading(dump.processGroups(), dump.progress(), nanoTime.getAsLong(),
          2 * settings.progressInterval().toNanos()));
      if (!answering) {
        log.info("rank {}: worker server at {} answers; progress is live", rank, socket);
      }
      answering = true;
      lastProblem = null;
      if (!finder.isAlive(pid)) {
        lookForPid(() -> finder.listenerOf(socket));
      }
    } catch (ControlPlaneException | DumpFormatException e) {
      answering = false;
      String problem = e.getMessage();
      if (!problem.equals(lastProblem)) {
        lastProblem = problem;
        log.warn("rank {}: no progress from its worker server: {}{}", rank, problem,
            settings.pipeDumpInterval() != null && settings.pipe(rank) != null
                ? "; dumping through its debug pipe every " + settings.pipeDumpInterval() + " instead" : "");
      }
    } catch (RuntimeException e) {
      answering = false;
      log.warn("rank {}: asking its worker server failed: {}", rank, e.toString(), e);
    }
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
