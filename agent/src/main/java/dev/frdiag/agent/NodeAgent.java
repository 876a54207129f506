package dev.frdiag.agent;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.agent.controlplane.UnixHttpClient;
import dev.frdiag.agent.controlplane.WorkerServer;
import dev.frdiag.agent.discovery.ProcProcessTable;
import dev.frdiag.agent.discovery.ProcessFinder;
import dev.frdiag.agent.discovery.ProcessTable;
import dev.frdiag.agent.discovery.RankDiscovery;
import dev.frdiag.agent.discovery.SchedulerIdentity;
import dev.frdiag.agent.discovery.TorchRank;
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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
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
   * The process table is scanned at most this often (and at least every poll interval): a scan reads every
   * process's environment, and ranks start and restart over seconds, not milliseconds.
   */
  static final Duration MIN_SCAN_INTERVAL = Duration.ofSeconds(1);
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
  /** Fixed at construction, or grown as discovery finds ranks; never shrinks. */
  @GuardedBy("lock")
  private final Map<Integer, LocalRank> ranks = new LinkedHashMap<>();
  /** Asks the ranks' worker servers. */
  private final WorkerServer server;
  /** The members of groups the ranks' dumps do not list. */
  /** Finds a rank's process when nothing names it. */
  private final ProcessFinder finder;
  /** Finds the node's ranks; null when they are listed. */
  private final RankDiscovery discovery;
  /** The scheduler's names for the job from the agent's own environment, for ranks listed by hand. */
  private final Map<String, String> ownScheduler;
  private final Channel channel;
  private final DumpReader reader;
  private final Clock clock;
  /** Sizes discovered ranks claimed that disagree with the job's, each warned about once. */
  @GuardedBy("lock")
  private final Map<Integer, Integer> refusedSizes = new TreeMap<>();
  @GuardedBy("lock")
  private long lastScanNanos;
  @GuardedBy("lock")
  private boolean scanned;
  @GuardedBy("lock")
  private boolean saidNoneFound;
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
    this(settings, channel, context, new ProcProcessTable(Path.of("/proc")), clock, nanoTime);
  }

  /** @param processes where discovery looks for the node's ranks when {@link AgentSettings#discoverRanks()} */
  NodeAgent(AgentSettings settings, Channel channel, NodeContextCollector context, ProcessTable processes,
      Clock clock, LongSupplier nanoTime) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.channel = Objects.requireNonNull(channel, "channel");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
    Objects.requireNonNull(processes, "processes");
    this.context = context;
    this.contextStub = CollectorGrpc.newStub(channel);
    this.reader = DumpReader.builder().maxFileBytes(settings.maxDumpBytes()).build();
    this.discovery = settings.discoverRanks() ? new RankDiscovery(processes, settings.runId()) : null;
    this.ownScheduler = SchedulerIdentity.of(System.getenv(), SchedulerIdentity.KUBERNETES_NAMESPACE_FILE);
    this.server = new WorkerServer(new UnixHttpClient(UnixHttpClient.DEFAULT_CONNECT_TIMEOUT,
        WORKER_SERVER_TIMEOUT, (int) Math.min(settings.maxDumpBytes(), DumpReader.MAX_FILE_BYTES_LIMIT)));
    this.finder = new ProcessFinder(Path.of("/proc"));
    if (settings.workerSocket() != null || settings.pipePrefix() != null) {
      this.poller = Executors.newScheduledThreadPool(MAX_POLLER_THREADS,
          new ThreadFactoryBuilder().setNameFormat("frdiag-agent-progress").setDaemon(true).build());
    } else {
      this.poller = null;
    }
    synchronized (lock) {
      for (int rank : settings.localRanks()) {
        // LOCAL_RANK as the position in the list: "--local-ranks 8-15" on the second node of eight GPUs.
        addRank(rank, settings.localRanks().indexOf(rank), 0, ownScheduler, settings);
      }
    }
    for (Path logFile : settings.logFiles()) {
      logs.add(new LogFollower(logFile, this::onWatchdogLine));
    }
    this.executor = Executors.newSingleThreadScheduledExecutor(
        new ThreadFactoryBuilder().setNameFormat("frdiag-agent").setDaemon(true).build());
    // Streams and pending requests are looked after at the batch delay; files only every poll interval.
    long period = Math.min(settings.pollInterval().toNanos(), settings.stream().maxBatchDelay().toNanos());
    executor.scheduleWithFixedDelay(this::tick, 0, period, TimeUnit.NANOSECONDS);
    log.info("node agent for job {} on {}: ranks {}, dumps {}<rank>, pipes {}, {} log file(s), progress {}",
        settings.jobId(), settings.hostname(), settings.discoverRanks() ? "discovered from the process table"
        + (settings.runId() == null ? "" : " (run " + settings.runId() + ")") : settings.localRanks(),
        settings.dumpPrefix(), settings.pipePrefix() == null ? "none" : settings.pipePrefix() + "<rank>.pipe",
        logs.size(), progressSource(settings));
  }

  /** True when there are local ranks and the daemon has welcomed every one's stream. Thread-safe. */
  public boolean allConnected() {
    synchronized (lock) {
      return !ranks.isEmpty() && ranks.values().stream().allMatch(LocalRank::isWelcomed);
    }
  }

  /**
   * The process each local rank's stream speaks for, by global rank: 0 for a rank listed by hand. Discovered
   * ranks appear once found and follow their restarts. Thread-safe.
   */
  public Map<Integer, Long> processes() {
    synchronized (lock) {
      Map<Integer, Long> out = new TreeMap<>();
      ranks.forEach((rank, r) -> out.put(rank, r.pid()));
      return out;
    }
  }

  /** Starts serving {@code rank}. */
  @GuardedBy("lock")
  private void addRank(int rank, int localRank, long pid, Map<String, String> scheduler, AgentSettings job) {
    RankProgress progress = new RankProgress(rank, job, server, reader, finder, nanoTime, poller,
        this::wake);
    ranks.put(rank, new LocalRank(rank, localRank, pid, scheduler, job, channel, reader, clock, lock,
        Collections.unmodifiableMap(ranks), () -> contextWanted = true, this::wake, progress));
    if (poller != null) {
      poller.scheduleWithFixedDelay(progress::poll, 0, job.progressInterval().toNanos(), TimeUnit.NANOSECONDS);
    }
  }

  /**
   * Looks for the node's ranks: a new one gets its stream, a restarted one (same rank, new process) has its
   * stream follow the new process. A rank whose process is gone keeps its stream until a new process takes its
   * place, since torchrun restarts a failed worker group under the same ranks.
   *
   * @return true when a rank was found or restarted
   */
  @GuardedBy("lock")
  private boolean scan(long now) {
    boolean changed = false;
    Map<Integer, TorchRank> found = discovery.scan();
    if (found.isEmpty() && ranks.isEmpty() && !saidNoneFound) {
      saidNoneFound = true;
      log.info("no PyTorch ranks found in the process table yet (processes with RANK, WORLD_SIZE and LOCAL_RANK or "
          + "TORCHELASTIC_RUN_ID{} in an environment this user may read); looking again every {} ms",
          settings.runId() == null ? "" : " " + settings.runId(),
          Math.max(settings.pollInterval().toMillis(), MIN_SCAN_INTERVAL.toMillis()));
    }
    for (TorchRank t : found.values()) {
      // --world-size when given, else the first rank's WORLD_SIZE: a rank that disagrees belongs to another job.
      int size = settings.worldSize() > 0 ? settings.worldSize()
          : ranks.isEmpty() ? t.worldSize() : ranks.values().iterator().next().worldSize();
      if (t.worldSize() != size) {
        if (refusedSizes.put(t.rank(), t.worldSize()) == null) {
          log.warn("rank {} (process {}) has WORLD_SIZE {} but the job has {} ranks; not followed", t.rank(),
              t.pid(), t.worldSize(), size);
        }
        continue;
      }
      Map<String, String> scheduler = new TreeMap<>(ownScheduler);
      scheduler.putAll(SchedulerIdentity.of(t.environment(), SchedulerIdentity.KUBERNETES_NAMESPACE_FILE));
      LocalRank r = ranks.get(t.rank());
      if (r == null) {
        log.info("found rank {} (local rank {}, process {}{})", t.rank(), t.localRank(), t.pid(),
            t.runId().isEmpty() ? "" : ", run " + t.runId());
        addRank(t.rank(), t.localRank(), t.pid(), scheduler, settings.withWorldSize(size));
        changed = true;
      } else {
        changed |= r.follow(t.pid(), t.localRank(), scheduler, now);
      }
    }
    return changed;
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
    if (context != null) {
      context.close();
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
      Set<Long> pids = new HashSet<>();
      ranks.values().forEach(r -> pids.add(r.announcedPid()));
      node = context.collect(settings.jobId(), settings.hostname(), CONTEXT_LOOKBACK, pids);
    } catch (RuntimeException e) {
      log.warn("gathering this node's context failed: {}", e.toString());
      return;
    }
    // The ranks this agent serves, and any other its node's NCCL log placed here, each once.
    Set<Integer> onNode = new TreeSet<>(node.getRanksList());
    onNode.addAll(ranks.keySet());
    node = node.toBuilder().clearRanks().addAllRanks(onNode).build();
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
      boolean ranksChanged = false;
      if (discovery != null && (!scanned || now - lastScanNanos
          >= Math.max(settings.pollInterval().toNanos(), MIN_SCAN_INTERVAL.toNanos()))) {
        scanned = true;
        lastScanNanos = now;
        try {
          ranksChanged = scan(now);
        } catch (RuntimeException e) {
          log.warn("looking for the node's ranks failed: {}", e.toString(), e);
        }
      }
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
          // What the probes find about the hang now reaches the daemon in a second post, once they are done.
          context.probeNow(() -> {
            contextWanted = true;
            wake();
          });
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
      boolean all = !ranks.isEmpty() && ranks.values().stream().allMatch(LocalRank::isWelcomed);
      if (all != connected) {
        connected = all;
        if (all) {
          log.info("all {} ranks connected to the daemon", ranks.size());
        } else if (!ranksChanged) {
          // A rank found or restarted just now is connecting; its own log line says so.
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
