package dev.frdiag.agent;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.agent.controlplane.UnixHttpClient;
import dev.frdiag.agent.controlplane.WorkerServer;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.ContextAck;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.WatchdogLine;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node agent: speaks to the daemon for the unmodified PyTorch ranks of one node. It ships their Flight
 * Recorder dumps as they appear, triggers fresh dumps through their debug pipes when the daemon asks, and
 * forwards the watchdog lines of their training logs as events (which is how a real job's incident starts).
 *
 * <p>It never touches the training processes beyond writing to their pipes and asking their worker servers. One
 * thread does the work but for those questions; each rank has its own stream to the daemon, reconnecting on its
 * own. Memory is bounded: a few queued events and requests per rank, the last dump read (at most
 * {@link AgentSettings#maxDumpBytes()} of file), one bounded chunk and one partial line per log.
 *
 * <p>The agent claims only what it sees. Heartbeats carry a rank's progress only from a fresh answer, each answer
 * once: the rank's worker server asked at the progress interval ({@link AgentSettings#workerSocket()}), or, when
 * that does not answer and periodic pipe dumps are on, a dump the rank wrote since its pipe was last written. A
 * rank that stops answering sends no progress, so in the daemon's eyes it stops advancing and, with work
 * outstanding, stalls after the daemon's stall timeout; an old snapshot is never passed off as current. Incidents
 * also start from the watchdog lines, and the daemon gets full dumps (with stacks) by asking. Dumps and log lines
 * already on disk when the agent starts are history, possibly of an earlier run, and are not sent.
 *
 * <p>Worker servers are asked, and the ranks' pids looked for in {@code /proc}, on a small pool of threads of their
 * own, so a rank whose server hangs delays neither the other ranks' streams nor the agent's thread.
 */
public final class NodeAgent implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(NodeAgent.class);
  /** How far back the counter window reaches when an incident asks for context. */
  static final Duration CONTEXT_LOOKBACK = Duration.ofMinutes(5);
  /**
   * How long a worker server may take to answer. Short: building the JSON of active entries takes milliseconds,
   * and a server that hangs holds up its poller thread, shared with other ranks.
   */
  static final Duration WORKER_SERVER_TIMEOUT = Duration.ofSeconds(2);
  /** Worker servers asked at once. */
  static final int MAX_POLLER_THREADS = 4;

  private final AgentSettings settings;
  private final LongSupplier nanoTime;
  private final ScheduledExecutorService executor;
  /** Asks the ranks' worker servers and looks for their pids; null when there is nothing to ask or look at. */
  private final ScheduledExecutorService poller;
  private final CollectorGrpc.CollectorStub contextStub;
  private final Object lock = new Object();
  /** Fixed at construction; the ranks' own state is guarded by lock. */
  @GuardedBy("lock")
  private final Map<Integer, LocalRank> ranks = new LinkedHashMap<>();
  @GuardedBy("lock")
  private final List<LogFollower> logs = new ArrayList<>();
  /** Null for none. */
  @GuardedBy("lock")
  private final NodeContextCollector context;
  @GuardedBy("lock")
  private boolean closed;
  @GuardedBy("lock")
  private long lastFilePollNanos;
  @GuardedBy("lock")
  private boolean filesPolled;
  @GuardedBy("lock")
  private boolean connected;
  /** Set on a gRPC thread by a dump request: the daemon is investigating, so it wants this node's context. */
  private volatile boolean contextWanted;

  /**
   * Starts the agent: streams connect in the background and files are polled every poll interval.
   *
   * @param channel to the daemon; the caller owns it and shuts it down after {@link #close}
   */
  public NodeAgent(AgentSettings settings, Channel channel) {
    this(settings, channel, null);
  }

  /**
   * Starts the agent, also posting this node's NCCL-log and InfiniBand findings to the daemon whenever it asks the
   * ranks for dumps (an incident), so the diagnosis can weigh them.
   *
   * @param context gathers the node's context; null for none
   */
  NodeAgent(AgentSettings settings, Channel channel, NodeContextCollector context) {
    this(settings, channel, context, Clock.systemUTC(), System::nanoTime);
  }

  /**
   * @param clock the wall clock events and heartbeats are stamped with, and dump files' times compared to
   * @param nanoTime the monotonic clock that paces polls, heartbeats and request deadlines
   */
  NodeAgent(AgentSettings settings, Channel channel, NodeContextCollector context, Clock clock,
      LongSupplier nanoTime) {
    this.settings = Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(channel, "channel");
    Objects.requireNonNull(clock, "clock");
    this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
    this.context = context;
    this.contextStub = CollectorGrpc.newStub(channel);
    DumpReader reader = DumpReader.builder().maxFileBytes(settings.maxDumpBytes()).build();
    Map<Integer, LocalRank> node = Collections.unmodifiableMap(ranks);
    WorkerServer server = new WorkerServer(new UnixHttpClient(UnixHttpClient.DEFAULT_CONNECT_TIMEOUT,
        WORKER_SERVER_TIMEOUT, (int) Math.min(settings.maxDumpBytes(), DumpReader.MAX_FILE_BYTES_LIMIT)));
    ProcessFinder finder = new ProcessFinder(Path.of("/proc"));
    List<RankProgress> progress = new ArrayList<>();
    for (int rank : settings.localRanks()) {
      RankProgress p = new RankProgress(rank, settings, server, reader, finder, nanoTime);
      progress.add(p);
      ranks.put(rank, new LocalRank(rank, settings, channel, reader, clock, lock, node,
          () -> contextWanted = true, this::wake, p));
    }
    if (settings.workerSocket() != null || settings.pipePrefix() != null) {
      this.poller = Executors.newScheduledThreadPool(Math.min(progress.size(), MAX_POLLER_THREADS), r -> {
        Thread t = new Thread(r, "frdiag-agent-progress");
        t.setDaemon(true);
        return t;
      });
      for (RankProgress p : progress) {
        poller.scheduleWithFixedDelay(p::poll, 0, settings.progressInterval().toNanos(),
            TimeUnit.NANOSECONDS);
      }
    } else {
      this.poller = null;
    }
    for (Path logFile : settings.logFiles()) {
      logs.add(new LogFollower(logFile, this::onWatchdogLine));
    }
    this.executor = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "frdiag-agent");
      t.setDaemon(true);
      return t;
    });
    // Streams and pending requests are looked after at the batch delay; files only every poll interval.
    long period = Math.min(settings.pollInterval().toNanos(), settings.stream().maxBatchDelay().toNanos());
    executor.scheduleWithFixedDelay(this::tick, 0, period, TimeUnit.NANOSECONDS);
    log.info("node agent for job {} on {}: ranks {}, dumps {}<rank>, pipes {}, {} log file(s), progress {}",
        settings.jobId(), settings.hostname(), settings.localRanks(), settings.dumpPrefix(),
        settings.pipePrefix() == null ? "none" : settings.pipePrefix() + "<rank>.pipe", logs.size(),
        progressSource(settings));
  }

  /** True when the daemon has welcomed every local rank's stream. Thread-safe. */
  public boolean allConnected() {
    synchronized (lock) {
      return ranks.values().stream().allMatch(LocalRank::isWelcomed);
    }
  }

  /**
   * Stops polling, answers pending dump requests with an error, sends queued events and says goodbye for every
   * rank. Idempotent; does not shut the channel down.
   */
  @Override
  public void close() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      for (LocalRank r : ranks.values()) {
        try {
          r.stop(nanoTime.getAsLong());
        } catch (RuntimeException e) {
          log.warn("rank {}: stopping its stream failed: {}", r.rank, e.toString());
        }
      }
    }
    executor.shutdownNow();
    if (poller != null) {
      poller.shutdownNow();
    }
  }

  private static String progressSource(AgentSettings s) {
    String pipe = s.pipeDumpInterval() != null && s.pipePrefix() != null
        ? "pipe dumps every " + s.pipeDumpInterval() : null;
    if (s.workerSocket() != null) {
      return "from worker servers " + s.workerSocket() + " every " + s.progressInterval()
          + (pipe == null ? "" : ", else " + pipe);
    }
    return pipe == null ? "none" : "from " + pipe;
  }

  /** Runs a tick soon: a request waits. Called on gRPC threads. */
  private void wake() {
    try {
      executor.execute(this::tick);
    } catch (RejectedExecutionException e) {
      // Closed: close() has answered what was pending.
    }
  }

  /** Posts the node's context without waiting: a slow daemon must not hold up dumps and logs. */
  @GuardedBy("lock")
  private void postContext() {
    NodeContext node;
    try {
      // The window reaches back far enough to hold the hang's start: the daemon asks after its stall timeout.
      node = context.collect(settings.jobId(), settings.hostname(), CONTEXT_LOOKBACK);
    } catch (RuntimeException e) {
      log.warn("gathering this node's context failed: {}", e.toString());
      return;
    }
    node = node.toBuilder().addAllRanks(settings.localRanks()).build();
    contextStub.withDeadlineAfter(10, TimeUnit.SECONDS).reportContext(node, new StreamObserver<>() {
      @Override
      public void onNext(ContextAck ack) {
      }

      @Override
      public void onError(Throwable t) {
        log.warn("posting this node's context failed: {}", Status.fromThrowable(t));
      }

      @Override
      public void onCompleted() {
      }
    });
    log.info("posted {} context findings for {}", node.getFindingsCount(), settings.hostname());
  }

  private void tick() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      long now = nanoTime.getAsLong();
      boolean pollFiles = !filesPolled || now - lastFilePollNanos >= settings.pollInterval().toNanos();
      if (pollFiles) {
        filesPolled = true;
        lastFilePollNanos = now;
        for (LogFollower f : logs) {
          try {
            f.poll();
          } catch (RuntimeException e) {
            log.warn("reading {} failed: {}", f.file(), e.toString(), e);
          }
        }
      }
      if (context != null) {
        if (pollFiles) {
          context.tick();
        }
        if (contextWanted) {
          contextWanted = false;
          postContext();
        }
      }
      for (LocalRank r : ranks.values()) {
        try {
          r.tick(now, pollFiles);
        } catch (RuntimeException e) {
          // One rank's failure must not stop the others; its stream starts over, which resends what it knows.
          log.warn("rank {}: agent tick failed, reconnecting: {}", r.rank, e.toString(), e);
          r.reset("agent error", e, now);
        }
      }
      boolean all = ranks.values().stream().allMatch(LocalRank::isWelcomed);
      if (all != connected) {
        connected = all;
        if (all) {
          log.info("all {} ranks connected to the daemon", ranks.size());
        } else {
          log.warn("lost the daemon for some ranks; reconnecting");
        }
      }
    }
  }

  /** Hands one watchdog line to its rank; lines of ranks on other nodes are not this agent's. */
  @GuardedBy("lock")
  private void onWatchdogLine(WatchdogLine w, Path source) {
    LocalRank r = ranks.get(w.rank());
    if (r != null) {
      r.onLine(w, source);
    }
  }
}
