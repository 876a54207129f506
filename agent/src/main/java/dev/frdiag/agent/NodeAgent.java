package dev.frdiag.agent;

import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.ContextAck;
import dev.frdiag.proto.v1.NodeContext;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.time.Instant;
import dev.frdiag.readers.pytorch.DumpFormatException;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.readers.pytorch.PgStatus;
import dev.frdiag.readers.pytorch.WatchdogLine;
import dev.frdiag.readers.pytorch.WatchdogLogReader;
import dev.frdiag.collector.reporter.RankStream;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.Goodbye;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.InternedFrame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.ProcessGroupUpdate;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.RecordBatch;
import io.grpc.Channel;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node agent: speaks to the daemon for the unmodified PyTorch ranks of one node. It ships their Flight
 * Recorder dumps as they appear, triggers fresh dumps through their debug pipes when the daemon asks, and
 * forwards the watchdog lines of their training logs as events (which is how a real job's incident starts).
 *
 * <p>It never touches the training processes beyond writing to their pipes. One thread does all the work; each
 * rank has its own stream to the daemon, reconnecting on its own. Memory is bounded: a few queued events and
 * requests per rank, the last dump read (at most {@link AgentSettings#maxDumpBytes()} of file), one bounded
 * chunk and one partial line per log.
 *
 * <p>The agent claims only what it sees. A dump is a snapshot of one moment, so heartbeats carry no progress
 * (an old snapshot's outstanding collective would look to the daemon like a group that stopped advancing);
 * incidents start from the watchdog lines, and the daemon gets fresh dumps by asking. Dumps and log lines already
 * on disk when the agent starts are history, possibly of an earlier run, and are not sent.
 */
public final class NodeAgent implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(NodeAgent.class);
  /** Bytes of one log read per poll, so a huge backlog cannot stall the agent. */
  static final int MAX_LOG_READ = 1 << 20;
  /** Longer lines are cut: the watchdog's lines are short, a glued progress bar is not worth keeping. */
  static final int MAX_LINE = 8192;
  /** Dump requests a rank keeps at once; the daemon sends one per incident. */
  static final int MAX_PENDING_REQUESTS = 16;
  /**
   * A dump written this long before the pipe was written still answers the request: file times may be cut to
   * whole seconds, and a rank whose watchdog just timed out has dumped on its own moments before.
   */
  static final long RECENT_DUMP_MILLIS = 1000;
  /** Largest reply the agent sends, under the daemon's default message limit of 4 MiB; oldest records go first. */
  static final int MAX_REPLY_BYTES = 3 << 20;

  /** How far back the counter window reaches when an incident asks for context. */
  static final Duration CONTEXT_LOOKBACK = Duration.ofMinutes(5);

  private final AgentSettings settings;
  private final DumpReader reader;
  private final ScheduledExecutorService executor;
  /** Fixed at construction; the ranks' own state is guarded by lock. */
  private final Map<Integer, AgentRank> ranks = new LinkedHashMap<>();
  private final List<LogTail> logs = new ArrayList<>();
  private final Object lock = new Object();
  // Guarded by lock.
  private boolean closed;
  private long lastFilePollNanos;
  private boolean filesPolled;
  private boolean connected;
  private final NodeContextCollector context;
  private final CollectorGrpc.CollectorStub contextStub;
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
  public NodeAgent(AgentSettings settings, Channel channel, NodeContextCollector context) {
    this.settings = Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(channel, "channel");
    this.context = context;
    this.contextStub = CollectorGrpc.newStub(channel);
    this.reader = DumpReader.builder().maxFileBytes(settings.maxDumpBytes()).build();
    for (int rank : settings.localRanks()) {
      ranks.put(rank, new AgentRank(rank, channel));
    }
    for (Path logFile : settings.logFiles()) {
      logs.add(new LogTail(logFile));
    }
    this.executor = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "frdiag-agent");
      t.setDaemon(true);
      return t;
    });
    // Streams and pending requests are looked after at the batch delay; files only every poll interval.
    long period = Math.min(settings.pollInterval().toNanos(), settings.stream().maxBatchDelay().toNanos());
    executor.scheduleWithFixedDelay(this::tick, 0, period, TimeUnit.NANOSECONDS);
    log.info("node agent for job {} on {}: ranks {}, dumps {}<rank>, pipes {}, {} log file(s)", settings.jobId(),
        settings.hostname(), settings.localRanks(), settings.dumpPrefix(),
        settings.pipePrefix() == null ? "none" : settings.pipePrefix() + "<rank>.pipe", logs.size());
  }

  /** True when the daemon has welcomed every local rank's stream. Thread-safe. */
  public boolean allConnected() {
    synchronized (lock) {
      return ranks.values().stream().allMatch(r -> r.stream.isWelcomed());
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
      for (AgentRank r : ranks.values()) {
        try {
          r.stop();
        } catch (RuntimeException e) {
          log.warn("rank {}: stopping its stream failed: {}", r.rank, e.toString());
        }
      }
    }
    executor.shutdownNow();
  }

  /** Posts the node's context without waiting: a slow daemon must not hold up dumps and logs. */
  private void postContext() {
    NodeContext node;
    try {
      // The window reaches back far enough to hold the hang's start: the daemon asks after its stall timeout.
      node = context.collect(settings.jobId(), settings.hostname(), Instant.now().minus(CONTEXT_LOOKBACK));
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
      long now = System.nanoTime();
      boolean pollFiles = !filesPolled || now - lastFilePollNanos >= settings.pollInterval().toNanos();
      if (pollFiles) {
        filesPolled = true;
        lastFilePollNanos = now;
        for (LogTail t : logs) {
          try {
            t.poll();
          } catch (RuntimeException e) {
            log.warn("reading {} failed: {}", t.file, e.toString(), e);
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
      for (AgentRank r : ranks.values()) {
        try {
          r.tick(now, pollFiles);
        } catch (RuntimeException e) {
          // One rank's failure must not stop the others; its stream starts over, which resends what it knows.
          log.warn("rank {}: agent tick failed, reconnecting: {}", r.rank, e.toString(), e);
          r.stream.reset("agent error", e, now);
        }
      }
      boolean all = ranks.values().stream().allMatch(r -> r.stream.isWelcomed());
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

  /** Translates one watchdog line into what its rank tells the daemon. */
  private void onWatchdogLine(WatchdogLine w, Path source) {
    AgentRank r = ranks.get(w.rank());
    if (r == null) {
      return;
    }
    switch (w.kind()) {
      case TIMEOUT -> r.timeout(RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_TIMEOUT)
          .setProcessGroup(w.pgId()).setSeq(w.seq()).setOp(w.opType().toLowerCase()).setMessage(w.text())
          .setLastEnqueuedSeq(-1).setLastCompletedSeq(-1));
      case PG_STATUS -> r.status(w);
      case WATCHDOG_STUCK -> r.queue(RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_STUCK)
          .setProcessGroup(w.pgId()).setSeq(-1).setMessage(w.text()).setLastEnqueuedSeq(-1)
          .setLastCompletedSeq(-1));
      // "Received a dump signal": another rank's timeout (reported by that rank), or this rank's own (reported
      // by its timeout line). Either way, nothing new about this rank.
      case DUMP_SIGNAL -> log.debug("rank {}: dump signal in {}: {}", r.rank, source, w.text());
      default -> { }
    }
  }

  /** One training log followed from where it ended when the agent started. */
  private final class LogTail {
    final Path file;
    Object fileKey;
    long offset;
    /** The start of a line whose end has not been written yet; at most MAX_LINE bytes are kept. */
    final ByteArrayOutputStream partial = new ByteArrayOutputStream();

    LogTail(Path file) {
      this.file = file;
      BasicFileAttributes a = attributes(file);
      // Start at the end: lines written before the agent started are history, not a new incident.
      this.offset = a == null ? 0 : a.size();
      this.fileKey = a == null ? null : a.fileKey();
    }

    void poll() {
      BasicFileAttributes a = attributes(file);
      if (a == null) {
        return;
      }
      if (a.size() < offset || fileKey != null && a.fileKey() != null && !fileKey.equals(a.fileKey())) {
        // Truncated, or rotated to a new file: its beginning is new.
        offset = 0;
        partial.reset();
      }
      fileKey = a.fileKey();
      if (a.size() == offset) {
        return;
      }
      try (SeekableByteChannel ch = Files.newByteChannel(file, StandardOpenOption.READ)) {
        ch.position(offset);
        ByteBuffer buf = ByteBuffer.allocate((int) Math.min(MAX_LOG_READ, a.size() - offset));
        while (buf.hasRemaining() && ch.read(buf) > 0) {
          // Read until the chunk is full or the file ends.
        }
        offset += buf.position();
        split(buf.array(), buf.position());
      } catch (NoSuchFileException e) {
        // Rotated away between the look and the read; the next poll sees the new file.
      } catch (IOException e) {
        log.warn("cannot read {}: {}", file, e.toString());
      }
    }

    /** Hands every complete line to the parser; keeps the unfinished end for the next read. */
    private void split(byte[] bytes, int length) {
      int start = 0;
      for (int i = 0; i < length; i++) {
        if (bytes[i] == '\n') {
          append(bytes, start, i - start);
          line(new String(partial.toByteArray(), StandardCharsets.UTF_8));
          partial.reset();
          start = i + 1;
        }
      }
      append(bytes, start, length - start);
    }

    private void append(byte[] bytes, int from, int length) {
      // Beyond MAX_LINE the line is cut: memory stays bounded however long a line without newline grows.
      partial.write(bytes, from, Math.min(length, MAX_LINE - partial.size()));
    }

    private void line(String text) {
      WatchdogLine w = WatchdogLogReader.parse(text, file.getFileName().toString());
      if (w != null) {
        onWatchdogLine(w, file);
      }
    }
  }

  /** A pending dump request and when its answer is due. */
  private record Pending(DumpRequest request, long dueNanos, long waitMillis) {}

  /** Identifies one version of a dump file without reading it. */
  private record FileVersion(long modifiedMillis, long modifiedNanos, long size) {
    static FileVersion of(BasicFileAttributes a) {
      return new FileVersion(a.lastModifiedTime().toMillis(), a.lastModifiedTime().to(TimeUnit.NANOSECONDS),
          a.size());
    }
  }

  /** One local rank: its stream, the last dump read, and the dump requests being served. */
  private final class AgentRank implements RankStream.Listener {
    final int rank;
    final RankStream stream;
    /** Filled by gRPC threads, drained by the agent thread; bounded so a flood cannot grow it. */
    final ArrayBlockingQueue<DumpRequest> requests = new ArrayBlockingQueue<>(MAX_PENDING_REQUESTS);
    // The rest is guarded by the agent's lock.
    final ArrayDeque<RankEvent> events = new ArrayDeque<>();
    long droppedEvents;
    /** Seq of the newest watchdog timeout seen, so its companion status line is not a second event. */
    long lastTimeoutSeq = -1;
    /** The dump file version last looked at, read or not. */
    FileVersion seen;
    FlightRecorderDump lastDump;
    long lastDumpMillis;
    /** Why the newest version of the dump file could not be used; null when it could. */
    String dumpProblem;
    List<ProcessGroup> announced = List.of();
    boolean unshipped;
    final List<Pending> pending = new ArrayList<>();
    /** When the pipe was written for the pending requests (epoch ms), and what went wrong doing it. */
    long triggeredAtMillis;
    String triggerProblem;
    long lastHeartbeatNanos;
    boolean heartbeatSent;

    AgentRank(int rank, Channel channel) {
      this.rank = rank;
      this.stream = new RankStream(channel, settings.stream(), "agent rank " + rank, this);
      BasicFileAttributes a = attributes(settings.dumpFile(rank));
      // A dump already there is history: it may be an earlier run's, and the daemon did not ask for it.
      this.seen = a == null ? null : FileVersion.of(a);
    }

    @Override
    public RankMessage hello() {
      // A new stream: what the old one carried is sent again. Requests of the old stream are dropped: the daemon
      // that sent them is gone or has given up on them, and a restarted daemon numbers its requests anew.
      requests.clear();
      pending.clear();
      unshipped = lastDump != null;
      return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
          .setJobId(settings.jobId()).setGlobalRank(rank).setWorldSize(settings.worldSize())
          .setLocalRank(settings.localRanks().indexOf(rank)).setHostname(settings.hostname()).setCudaDevice(-1)
          .setFrdiagVersion("0.1.0").setFrameworkVersion("torch").setNcclVersion(
              lastDump == null ? "" : lastDump.commLibVersion()))
          .addAllProcessGroups(announced).setRingCapacity(0)).build();
    }

    @Override
    public void onDumpRequest(DumpRequest request) {
      contextWanted = true;
      if (!requests.offer(request)) {
        log.warn("rank {}: {} dump requests already pending, request {} dropped", rank, MAX_PENDING_REQUESTS,
            request.getRequestId());
        return;
      }
      try {
        executor.execute(NodeAgent.this::tick);
      } catch (RejectedExecutionException e) {
        // Closed: close() has answered what was pending.
      }
    }

    void timeout(RankEvent.Builder event) {
      lastTimeoutSeq = event.getSeq();
      queue(event);
    }

    /** The per-group status line: completes the timeout just read, or is a failure of its own. */
    void status(WatchdogLine w) {
      RankEvent last = events.peekLast();
      if (last != null && last.getKind() == RankEvent.Kind.WATCHDOG_TIMEOUT && last.getSeq() == w.seq()) {
        events.pollLast();
        events.addLast(last.toBuilder().setLastEnqueuedSeq(w.lastEnqueued())
            .setLastCompletedSeq(w.lastCompleted())
            .setProcessGroup(last.getProcessGroup().isEmpty() ? w.pgId() : last.getProcessGroup()).build());
        return;
      }
      if (w.seq() == lastTimeoutSeq) {
        return;
      }
      // Without a timeout line it reports an error the watchdog caught ("either an error or timeout").
      RankEvent.Kind kind = w.text().contains("Timeout at NCCL work") ? RankEvent.Kind.WATCHDOG_TIMEOUT
          : RankEvent.Kind.COMM_ERROR;
      queue(RankEvent.newBuilder().setKind(kind).setProcessGroup(w.pgId()).setSeq(w.seq()).setMessage(w.text())
          .setLastEnqueuedSeq(w.lastEnqueued()).setLastCompletedSeq(w.lastCompleted()));
    }

    void queue(RankEvent.Builder event) {
      if (events.size() >= settings.stream().maxQueuedEvents()) {
        events.removeFirst();
        droppedEvents++;
        log.warn("rank {}: event queue full while the daemon is away; {} oldest event(s) dropped so far", rank,
            droppedEvents);
      }
      events.addLast(event.setTimeNs(System.currentTimeMillis() * 1_000_000L).build());
    }

    void tick(long now, boolean pollFiles) {
      boolean open = stream.poll(now);
      takeRequests(now);
      if (pollFiles || !pending.isEmpty()) {
        lookAtDump();
      }
      if (!open) {
        // Replies can only go on a stream; a request whose answer fell due meanwhile is no longer awaited.
        pending.removeIf(p -> now >= p.dueNanos());
        return;
      }
      if (unshipped) {
        ship();
      }
      while (!events.isEmpty() && stream.isReady()) {
        stream.send(RankMessage.newBuilder().setEvent(events.removeFirst()).build());
      }
      answer(now);
      if (!heartbeatSent || now - lastHeartbeatNanos >= settings.stream().heartbeatInterval().toNanos()) {
        heartbeatSent = true;
        lastHeartbeatNanos = now;
        stream.send(RankMessage.newBuilder().setHeartbeat(Heartbeat.newBuilder()
            .setSentAtNs(System.currentTimeMillis() * 1_000_000L)).build());
      }
    }

    /** Says goodbye; pending requests get an error, so the daemon need not wait out its deadline. */
    void stop() {
      if (stream.isWelcomed()) {
        takeRequests(System.nanoTime());
        for (Pending p : pending) {
          stream.send(RankMessage.newBuilder().setDumpReply(DumpReply.newBuilder()
              .setRequestId(p.request().getRequestId()).setError("the node agent is stopping")).build());
        }
        while (!events.isEmpty()) {
          stream.send(RankMessage.newBuilder().setEvent(events.removeFirst()).build());
        }
      }
      pending.clear();
      stream.finish(RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("node agent stopped"))
          .build());
    }

    /** New requests join the pending ones; the pipe is written once for all that wait together. */
    private void takeRequests(long now) {
      DumpRequest request;
      while ((request = requests.poll()) != null) {
        // Answer before the daemon stops waiting: a fifth of its deadline is left for the reply to travel.
        long deadlineMillis = request.getDeadlineMs() > 0 ? request.getDeadlineMs() - request.getDeadlineMs() / 5
            : Long.MAX_VALUE;
        long waitMillis = Math.max(1, Math.min(settings.dumpWait().toMillis(), deadlineMillis));
        if (pending.isEmpty()) {
          triggeredAtMillis = System.currentTimeMillis();
          triggerProblem = triggerDump();
        }
        pending.add(new Pending(request, now + TimeUnit.MILLISECONDS.toNanos(waitMillis), waitMillis));
        log.info("rank {}: daemon asks for a dump (request {}: {}){}", rank, request.getRequestId(),
            request.getReason(), triggerProblem == null ? "; pipe written" : "; " + triggerProblem);
      }
    }

    /**
     * Writes to the rank's debug pipe. Opened read-write and without create: on Linux that never blocks, even
     * when no process reads the pipe (a dead rank), where a write-only open would wait forever; and it never
     * makes a regular file where the pipe should be.
     *
     * @return null when written, else why not
     */
    private String triggerDump() {
      Path pipe = settings.pipe(rank);
      if (pipe == null) {
        return "no debug pipe configured (TORCH_NCCL_DEBUG_INFO_PIPE_FILE), so it cannot be asked to dump";
      }
      BasicFileAttributes a = attributes(pipe);
      if (a == null) {
        return "its dump pipe " + pipe + " does not exist (is TORCH_NCCL_DEBUG_INFO_PIPE_FILE set on the job,"
            + " and TORCH_FR_BUFFER_SIZE above 0?)";
      }
      if (!a.isOther()) {
        return pipe + " is not a named pipe";
      }
      try (FileChannel ch = FileChannel.open(pipe, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
        ch.write(ByteBuffer.wrap(new byte[] {'1'}));
        return null;
      } catch (IOException e) {
        return "cannot write its dump pipe " + pipe + ": " + e;
      }
    }

    /** Reads the rank's dump file when it changed since it was last looked at. */
    private void lookAtDump() {
      Path file = settings.dumpFile(rank);
      BasicFileAttributes a = attributes(file);
      if (a == null || !a.isRegularFile()) {
        return;
      }
      FileVersion version = FileVersion.of(a);
      if (version.equals(seen)) {
        return;
      }
      // Remembered even when reading fails: a dump still being written is read again once its size or time
      // changes, a corrupt one is not read again and again.
      seen = version;
      try {
        FlightRecorderDump dump = reader.read(file, rank);
        lastDump = usable(dump);
        lastDumpMillis = version.modifiedMillis();
        dumpProblem = null;
        unshipped = true;
        log.info("rank {}: read dump {} ({} records, format {})", rank, file, lastDump.records().size(),
            dump.version());
      } catch (DumpFormatException e) {
        dumpProblem = e.getMessage();
        log.debug("rank {}: {}", rank, e.getMessage());
      }
    }

    /**
     * The dump without what the daemon would reject (a group this rank is not in or with members beyond the
     * world size, a record without op or creation time), so one odd dump cannot get the stream refused on every
     * reconnect.
     */
    private FlightRecorderDump usable(FlightRecorderDump dump) {
      List<ProcessGroup> groups = new ArrayList<>();
      Set<String> names = new HashSet<>();
      for (ProcessGroup g : dump.processGroups()) {
        boolean inWorld = g.getRanksList().stream().allMatch(m -> m >= 0 && m < settings.worldSize());
        if (inWorld && g.getRanksList().contains(rank)) {
          groups.add(g);
          names.add(g.getName());
        } else {
          log.warn("rank {}: process group '{}' of {} left out: {}", rank, g.getName(), dump.file(), inWorld
              ? "this rank is not one of its members " + g.getRanksList()
              : "members " + g.getRanksList() + " exceed world size " + settings.worldSize());
        }
      }
      List<CollectiveRecord> records = new ArrayList<>(dump.records().size());
      for (CollectiveRecord r : dump.records()) {
        if (names.contains(r.getProcessGroup()) && !r.getOp().isEmpty() && r.getTimeCreatedNs() > 0
            && (r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq()) >= 0) {
          records.add(r);
        }
      }
      if (records.size() < dump.records().size()) {
        log.warn("rank {}: {} of {} records of {} left out (unknown group, no op, no time or negative seq)", rank,
            dump.records().size() - records.size(), dump.records().size(), dump.file());
      }
      // The node's other ranks' dumps help tell which groups' pg_status counts P2P seqs.
      List<FlightRecorderDump> known = new ArrayList<>(List.of(dump));
      for (AgentRank other : ranks.values()) {
        if (other != this && other.lastDump != null) {
          known.add(other.lastDump);
        }
      }
      List<ProcessGroupProgress> progress = PgStatus.normalized(dump, PgStatus.seqRanges(known)).stream()
          .filter(p -> names.contains(p.getProcessGroup())).toList();
      return new FlightRecorderDump(dump.file(), dump.rank(), dump.version(), dump.commLibVersion(), groups,
          records, progress, dump.frames(), dump.warnings());
    }

    /** Announces the dump's new groups, then sends its records in batches, so the daemon's window is current. */
    private void ship() {
      unshipped = false;
      List<ProcessGroup> added = new ArrayList<>(lastDump.processGroups());
      added.removeAll(announced);
      if (!added.isEmpty()) {
        stream.send(RankMessage.newBuilder().setProcessGroups(ProcessGroupUpdate.newBuilder()
            .addAllProcessGroups(added)).build());
        List<ProcessGroup> all = new ArrayList<>(announced);
        all.addAll(added);
        announced = List.copyOf(all);
      }
      List<CollectiveRecord> records = lastDump.records();
      int batchSize = settings.stream().maxBatchRecords();
      for (int from = 0; from < records.size(); from += batchSize) {
        RecordBatch.Builder batch = RecordBatch.newBuilder();
        Set<Integer> frames = new HashSet<>();
        for (CollectiveRecord r : records.subList(from, Math.min(records.size(), from + batchSize))) {
          batch.addRecords(r);
          frames.addAll(r.getFrameIdsList());
        }
        addFrames(frames, batch::addFrames);
        stream.send(RankMessage.newBuilder().setRecords(batch).build());
      }
    }

    /** Answers every pending request a fresh dump answers, and those whose time is up with an error. */
    private void answer(long now) {
      if (pending.isEmpty()) {
        return;
      }
      boolean fresh = lastDump != null && lastDumpMillis >= triggeredAtMillis - RECENT_DUMP_MILLIS;
      DumpReply dump = fresh ? reply() : null;
      for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
        Pending p = it.next();
        long id = p.request().getRequestId();
        if (fresh) {
          stream.send(RankMessage.newBuilder().setDumpReply(dump.toBuilder().setRequestId(id)).build());
          log.info("rank {}: answered request {} with its dump ({} records)", rank, id, dump.getRecordsCount());
          it.remove();
        } else if (now >= p.dueNanos()) {
          String error = noAnswer(p.waitMillis());
          stream.send(RankMessage.newBuilder().setDumpReply(DumpReply.newBuilder().setRequestId(id)
              .setError(error)).build());
          log.warn("rank {}: request {}: {}", rank, id, error);
          it.remove();
        }
      }
    }

    private String noAnswer(long waitedMillis) {
      Path file = settings.dumpFile(rank);
      boolean unreadable = dumpProblem != null && seen != null
          && seen.modifiedMillis() >= triggeredAtMillis - RECENT_DUMP_MILLIS;
      String dump = unreadable ? "its dump could not be read: " + dumpProblem
          : "no dump at " + file + " within " + waitedMillis + " ms";
      return triggerProblem == null ? "rank " + rank + " did not answer its dump pipe " + settings.pipe(rank) + ": "
          + dump : "rank " + rank + " did not answer: " + triggerProblem + "; " + dump;
    }

    /** The last dump as one reply; when too large for the daemon, its oldest records are left out and counted. */
    private DumpReply reply() {
      List<CollectiveRecord> records = lastDump.records();
      int budget = MAX_REPLY_BYTES;
      for (ProcessGroupProgress p : lastDump.progress()) {
        budget -= p.getSerializedSize() + 8;
      }
      Set<Integer> frames = new HashSet<>();
      int first = records.size();
      while (first > 0) {
        CollectiveRecord r = records.get(first - 1);
        int cost = r.getSerializedSize() + 8;
        for (int id : r.getFrameIdsList()) {
          Frame f = frames.contains(id) ? null : lastDump.frames().get(id);
          cost += f == null ? 0 : f.getSerializedSize() + 16;
        }
        if (cost > budget) {
          break;
        }
        budget -= cost;
        frames.addAll(r.getFrameIdsList());
        first--;
      }
      if (first > 0) {
        log.warn("rank {}: dump too large for one reply; its {} oldest of {} records left out", rank, first,
            records.size());
      }
      DumpReply.Builder b = DumpReply.newBuilder().addAllRecords(records.subList(first, records.size()))
          .addAllProgress(lastDump.progress()).setDroppedRecords(first);
      addFrames(frames, b::addFrames);
      return b.build();
    }

    private void addFrames(Set<Integer> ids, java.util.function.Consumer<InternedFrame> sink) {
      for (int id : ids) {
        Frame f = lastDump.frames().get(id);
        if (f != null) {
          sink.accept(InternedFrame.newBuilder().setId(id).setFrame(f).build());
        }
      }
    }
  }

  /** The file's attributes, or null when it does not exist or cannot be looked at. */
  private static BasicFileAttributes attributes(Path file) {
    try {
      return Files.readAttributes(file, BasicFileAttributes.class);
    } catch (IOException e) {
      return null;
    }
  }
}
