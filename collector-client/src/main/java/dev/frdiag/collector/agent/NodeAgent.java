package dev.frdiag.collector.agent;

import dev.frdiag.collector.pytorch.DumpFormatException;
import dev.frdiag.collector.pytorch.DumpReader;
import dev.frdiag.collector.pytorch.FlightRecorderDump;
import dev.frdiag.collector.pytorch.WatchdogLine;
import dev.frdiag.collector.pytorch.WatchdogLogReader;
import dev.frdiag.collector.reporter.RankStream;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
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
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
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
 * rank has its own stream to the daemon, reconnecting on its own.
 */
public final class NodeAgent implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(NodeAgent.class);
  /** Events kept per rank while the daemon is away; older ones are dropped first. */
  static final int MAX_QUEUED_EVENTS = 256;
  /** Bytes of a log read per poll, so a huge backlog cannot stall the agent. */
  static final int MAX_LOG_READ = 4 * 1024 * 1024;

  private final AgentSettings settings;
  private final DumpReader reader = DumpReader.create();
  private final ScheduledExecutorService executor;
  private final Map<Integer, AgentRank> ranks = new LinkedHashMap<>();
  private final Map<Path, Long> logOffsets = new HashMap<>();
  private final Map<Path, String> logPartial = new HashMap<>();
  private final Object lock = new Object();
  private boolean closed;

  /** Starts the agent: streams connect in the background and files are polled every poll interval. */
  public NodeAgent(AgentSettings settings, Channel channel) {
    this.settings = settings;
    this.executor = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "frdiag-agent");
      t.setDaemon(true);
      return t;
    });
    for (int rank : settings.localRanks()) {
      ranks.put(rank, new AgentRank(rank, channel));
    }
    for (Path logFile : settings.logFiles()) {
      // Start at the end: lines written before the agent started are history, not a new incident.
      logOffsets.put(logFile, sizeOf(logFile));
    }
    long period = settings.pollInterval().toNanos();
    executor.scheduleWithFixedDelay(this::tick, 0, Math.min(period, settings.stream().maxBatchDelay().toNanos()),
        TimeUnit.NANOSECONDS);
  }

  /** True when the daemon has welcomed every local rank's stream. */
  public boolean allConnected() {
    synchronized (lock) {
      return ranks.values().stream().allMatch(r -> r.stream.isWelcomed());
    }
  }

  /** Stops polling and says goodbye for every rank. Idempotent. */
  @Override
  public void close() {
    try {
      executor.submit(() -> {
        synchronized (lock) {
          closed = true;
          for (AgentRank r : ranks.values()) {
            r.stream.finish(RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("agent stopped"))
                .build());
          }
        }
      }).get(settings.stream().shutdownTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      log.warn("agent shutdown did not finish cleanly: {}", e.toString());
    } finally {
      executor.shutdownNow();
    }
  }

  private void tick() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      long now = System.nanoTime();
      try {
        tailLogs();
        for (AgentRank r : ranks.values()) {
          r.tick(now);
        }
      } catch (RuntimeException e) {
        // One bad file or rank must not stop the agent for the others.
        log.warn("agent tick failed: {}", e.toString(), e);
      }
    }
  }

  private void tailLogs() {
    for (Path logFile : settings.logFiles()) {
      long size = sizeOf(logFile);
      long offset = logOffsets.getOrDefault(logFile, 0L);
      if (size < offset) {
        // Truncated or rotated: start over from its beginning.
        offset = 0;
        logPartial.remove(logFile);
      }
      if (size == offset) {
        continue;
      }
      try (SeekableByteChannel ch = Files.newByteChannel(logFile, StandardOpenOption.READ)) {
        ch.position(offset);
        ByteBuffer buf = ByteBuffer.allocate((int) Math.min(MAX_LOG_READ, size - offset));
        int n = ch.read(buf);
        if (n <= 0) {
          continue;
        }
        logOffsets.put(logFile, offset + n);
        String text = logPartial.getOrDefault(logFile, "") + new String(buf.array(), 0, n, StandardCharsets.UTF_8);
        int last = text.lastIndexOf('\n');
        logPartial.put(logFile, last < 0 ? text : text.substring(last + 1));
        if (last < 0) {
          continue;
        }
        int lineNo = 0;
        for (String line : text.substring(0, last).split("\n")) {
          lineNo++;
          WatchdogLine w = WatchdogLogReader.parse(line, logFile.getFileName() + ":+" + lineNo);
          AgentRank r = w == null ? null : ranks.get(w.rank());
          if (r != null) {
            r.queue(event(w));
          }
        }
      } catch (IOException e) {
        log.debug("cannot read {}: {}", logFile, e.toString());
      }
    }
  }

  private static RankEvent event(WatchdogLine w) {
    RankEvent.Kind kind = w.kind() == WatchdogLine.Kind.WATCHDOG_STUCK ? RankEvent.Kind.WATCHDOG_STUCK
        : RankEvent.Kind.WATCHDOG_TIMEOUT;
    return RankEvent.newBuilder().setKind(kind).setTimeNs(System.currentTimeMillis() * 1_000_000)
        .setProcessGroup(w.pgId()).setSeq(w.seq()).setOp(w.opType().toLowerCase()).setMessage(w.text())
        .setLastEnqueuedSeq(w.lastEnqueued()).setLastCompletedSeq(w.lastCompleted()).build();
  }

  private static long sizeOf(Path file) {
    try {
      return Files.size(file);
    } catch (IOException e) {
      return 0;
    }
  }

  /** One local rank: its stream, the last dump shipped, and a dump request in progress. */
  private final class AgentRank implements RankStream.Listener {
    final int rank;
    final RankStream stream;
    final Queue<DumpRequest> requests = new ConcurrentLinkedQueue<>();
    final ArrayDeque<RankEvent> events = new ArrayDeque<>();
    FileTime shippedDump;
    FlightRecorderDump lastDump;
    List<ProcessGroup> announced = List.of();
    long lastHeartbeat;
    // The dump request being served: when the pipe was written and until when to wait.
    DumpRequest pending;
    long pendingSinceMillis;
    long pendingDeadline;

    AgentRank(int rank, Channel channel) {
      this.rank = rank;
      this.stream = new RankStream(channel, settings.stream(), "agent rank " + rank, this);
    }

    @Override
    public RankMessage hello() {
      // Everything known is sent again on a new stream.
      shippedDump = null;
      announced = lastDump == null ? List.of() : lastDump.processGroups();
      return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
          .setJobId(settings.jobId()).setGlobalRank(rank).setWorldSize(settings.worldSize())
          .setLocalRank(settings.localRanks().indexOf(rank)).setHostname(settings.hostname()).setCudaDevice(-1)
          .setFrdiagVersion("0.1.0").setFrameworkVersion("torch").setNcclVersion(
              lastDump == null ? "" : lastDump.commLibVersion()))
          .addAllProcessGroups(announced).setRingCapacity(0)).build();
    }

    @Override
    public void onDumpRequest(DumpRequest request) {
      requests.add(request);
      executor.execute(NodeAgent.this::tick);
    }

    void queue(RankEvent e) {
      if (events.size() == MAX_QUEUED_EVENTS) {
        events.removeFirst();
      }
      events.addLast(e);
    }

    void tick(long now) {
      if (!stream.poll(now)) {
        return;
      }
      while (!events.isEmpty() && stream.isReady()) {
        stream.send(RankMessage.newBuilder().setEvent(events.removeFirst()).build());
      }
      if (pending == null && !requests.isEmpty()) {
        pending = requests.poll();
        pendingSinceMillis = System.currentTimeMillis();
        long wait = Math.min(settings.dumpWait().toNanos(),
            pending.getDeadlineMs() > 0 ? pending.getDeadlineMs() * 1_000_000 : Long.MAX_VALUE);
        pendingDeadline = now + wait;
        triggerDump();
      }
      FileTime modified = modified(settings.dumpFile(rank));
      boolean fresh = modified != null && !modified.equals(shippedDump);
      if (fresh) {
        readDump(modified);
      }
      if (pending != null) {
        boolean answered = lastDump != null && modified != null
            && modified.toMillis() >= pendingSinceMillis - 1000 && fresh;
        if (answered) {
          stream.send(RankMessage.newBuilder().setDumpReply(reply(pending.getRequestId(), null)).build());
          pending = null;
        } else if (now >= pendingDeadline) {
          stream.send(RankMessage.newBuilder().setDumpReply(reply(pending.getRequestId(),
              "rank " + rank + " wrote no dump within " + settings.dumpWait().toMillis() + " ms of its pipe being "
                  + "written")).build());
          pending = null;
        }
      } else if (fresh && lastDump != null) {
        shipRecords();
      }
      if (now - lastHeartbeat >= settings.stream().heartbeatInterval().toNanos()) {
        lastHeartbeat = now;
        stream.send(RankMessage.newBuilder().setHeartbeat(Heartbeat.newBuilder()
            .setSentAtNs(System.currentTimeMillis() * 1_000_000).addAllProgress(progress())).build());
      }
    }

    private void triggerDump() {
      Path pipe = settings.pipe(rank);
      if (pipe == null || !Files.exists(pipe)) {
        return;
      }
      // Opened read-write: on Linux that never blocks, even when no process is reading (a dead rank), where a
      // write-only open would wait forever.
      try (RandomAccessFile f = new RandomAccessFile(pipe.toFile(), "rw")) {
        f.write('1');
      } catch (IOException e) {
        log.warn("rank {}: cannot write its dump pipe {}: {}", rank, pipe, e.toString());
      }
    }

    private void readDump(FileTime modified) {
      try {
        FlightRecorderDump d = reader.read(settings.dumpFile(rank), rank);
        lastDump = d;
        shippedDump = modified;
        List<ProcessGroup> added = new ArrayList<>(d.processGroups());
        added.removeAll(announced);
        if (!added.isEmpty()) {
          stream.send(RankMessage.newBuilder().setProcessGroups(ProcessGroupUpdate.newBuilder()
              .addAllProcessGroups(added)).build());
          List<ProcessGroup> all = new ArrayList<>(announced);
          all.addAll(added);
          announced = all;
        }
      } catch (DumpFormatException e) {
        // A dump still being written reads as truncated; the next poll tries again.
        log.debug("rank {}: {}", rank, e.getMessage());
      }
    }

    private void shipRecords() {
      RecordBatch.Builder batch = RecordBatch.newBuilder().addAllRecords(lastDump.records());
      lastDump.frames().forEach((id, f) -> batch.addFrames(InternedFrame.newBuilder().setId(id).setFrame(f)));
      stream.send(RankMessage.newBuilder().setRecords(batch).build());
    }

    private DumpReply reply(long requestId, String error) {
      DumpReply.Builder b = DumpReply.newBuilder().setRequestId(requestId);
      if (error != null) {
        return b.setError(error).build();
      }
      b.addAllRecords(lastDump.records()).addAllProgress(progress());
      lastDump.frames().forEach((id, f) -> b.addFrames(InternedFrame.newBuilder().setId(id).setFrame(f)));
      return b.build();
    }

    private List<ProcessGroupProgress> progress() {
      return lastDump == null ? List.of() : lastDump.progress();
    }

    private FileTime modified(Path file) {
      try {
        return Files.getLastModifiedTime(file);
      } catch (IOException e) {
        return null;
      }
    }
  }
}
