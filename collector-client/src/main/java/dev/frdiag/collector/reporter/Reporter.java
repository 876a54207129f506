package dev.frdiag.collector.reporter;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.ring.RecordRing;
import dev.frdiag.collector.ring.RecordView;
import dev.frdiag.proto.RecordTemplates;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.Goodbye;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.InternedFrame;
import dev.frdiag.proto.v1.ProcessGroupUpdate;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.RecordBatch;
import io.grpc.Channel;
import java.time.Duration;
import java.util.BitSet;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Streams one rank's {@link FlightRecorder} to the daemon: a Hello, heartbeats with per-group progress, record
 * deltas in batches, events, and full snapshots on request.
 *
 * <p>The ring itself is the only buffer: deltas are read from it when the stream can take them, so while the
 * daemon is away the rank keeps recording in bounded memory and records overwritten before they were shipped
 * are counted as dropped and reported on reconnect. After every (re)connect the whole ring window is sent
 * again, so a restarted daemon ends up with the rank's full window.
 *
 * <p>All stream work runs on one executor task at a time; recording threads never touch it.
 */
public final class Reporter implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Reporter.class);

  private final FlightRecorder recorder;
  private final RankIdentity identity;
  private final RankStream stream;
  private final ReporterSettings settings;
  private final ScheduledExecutorService executor;
  private final boolean ownsExecutor;
  // The wall clock the daemon reads timestamps (sent_at) by; heartbeat intervals and flush deadlines are spans,
  // measured on System.nanoTime, which a wall-clock step cannot stretch or cut.
  private final LongSupplier clockNanos;
  private final Object lock = new Object();
  private final Queue<DumpRequest> dumpRequests = new ConcurrentLinkedQueue<>();
  private final ArrayBlockingQueue<RankEvent> events;
  private final AtomicLong droppedEvents = new AtomicLong();
  private final RecordView view = new RecordView();

  // Shipping state: touched only from tick and close, under lock.
  @GuardedBy("lock")
  private long newCursor;
  // Every record below this id was shipped on some stream or counted as dropped. Kept apart from newCursor,
  // which rewinds on every connect attempt: a record shipped to an earlier daemon and overwritten during an
  // outage was not lost by the rank, so it must not be counted again.
  @GuardedBy("lock")
  private long accountedUpTo;
  @GuardedBy("lock")
  private long[] open = new long[16];
  @GuardedBy("lock")
  private int openCount;
  @GuardedBy("lock")
  private long droppedRecords;
  @GuardedBy("lock")
  private long lastHeartbeatNanos;
  @GuardedBy("lock")
  private int announcedGroups;
  @GuardedBy("lock")
  private final BitSet shippedStacks = new BitSet();
  /** Templates sent on the current stream. */
  @GuardedBy("lock")
  private final TemplateIds streamTemplates = new TemplateIds();
  @GuardedBy("lock")
  private boolean closed;
  @GuardedBy("lock")
  private boolean killed;

  private final ScheduledFuture<?> ticker;

  private Reporter(Builder b) {
    this.recorder = b.recorder;
    this.identity = b.identity;
    this.settings = b.settings;
    this.stream = new RankStream(b.channel, settings, "rank " + identity.getGlobalRank(), new RankStream.Listener() {
      @Override
      public RankMessage hello() {
        return onNewStream();
      }

      @Override
      public void onDumpRequest(DumpRequest request) {
        dumpRequests.add(request);
        executor.execute(Reporter.this::tick);
      }
    });
    this.clockNanos = b.clockNanos;
    this.events = new ArrayBlockingQueue<>(settings.maxQueuedEvents());
    if (b.executor != null) {
      this.executor = b.executor;
      this.ownsExecutor = false;
    } else {
      this.executor = Executors.newSingleThreadScheduledExecutor(new ThreadFactoryBuilder()
          .setNameFormat("frdiag-reporter-" + identity.getGlobalRank()).setDaemon(true).build());
      this.ownsExecutor = true;
    }
    long period = settings.maxBatchDelay().toNanos();
    // Spread ranks sharing an executor so their ticks do not all land at once.
    long initialDelay = ThreadLocalRandom.current().nextLong(Math.max(1, period));
    this.ticker = executor.scheduleWithFixedDelay(this::tick, initialDelay, period, TimeUnit.NANOSECONDS);
  }

  /** Starts building a reporter for {@code recorder}, which records the rank {@code identity} describes. */
  public static Builder builder(FlightRecorder recorder, RankIdentity identity, Channel channel) {
    return new Builder(recorder, identity, channel);
  }

  /** Queues an event for the daemon; never blocks. A full queue drops the event and counts it. */
  public void report(RankEvent event) {
    Objects.requireNonNull(event, "event");
    if (!events.offer(event)) {
      droppedEvents.incrementAndGet();
    }
  }

  /** Records overwritten in the ring before they could be shipped, since this reporter started. */
  public long droppedRecords() {
    synchronized (lock) {
      return droppedRecords;
    }
  }

  /** Events dropped because the queue was full. */
  public long droppedEvents() {
    return droppedEvents.get();
  }

  /** True while a stream is open and welcomed by the daemon. */
  public boolean isConnected() {
    return stream.isWelcomed();
  }

  /** Completes when the daemon first welcomes this rank. */
  public CompletableFuture<Void> firstConnect() {
    return stream.firstWelcome();
  }

  /** Number of streams the daemon has welcomed so far (1 after the first connect). */
  public long connectCount() {
    return stream.welcomes();
  }

  /**
   * Stops intake, flushes what the ring holds with a deadline, says Goodbye and closes the stream. Idempotent.
   */
  @Override
  public void close() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
    }
    ticker.cancel(false);
    long deadline = System.nanoTime() + settings.shutdownTimeout().toNanos();
    try {
      executor.submit(() -> {
        synchronized (lock) {
          if (stream.isWelcomed() && !killed) {
            shipDeltas(deadline);
            drainEvents();
          }
          stream.finish(RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder().setReason("shutdown")).build());
        }
      }).get(settings.shutdownTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      log.warn("rank {}: reporter shutdown did not finish cleanly: {}", identity.getGlobalRank(), e.toString());
    } finally {
      if (ownsExecutor) {
        executor.shutdownNow();
      }
    }
  }

  /**
   * Ends the stream abruptly, as if the process died: no flush, no Goodbye. For simulators and tests.
   */
  public void kill() {
    synchronized (lock) {
      killed = true;
      closed = true;
      stream.abort("process died");
    }
    ticker.cancel(false);
    if (ownsExecutor) {
      executor.shutdownNow();
    }
  }

  private void tick() {
    try {
      synchronized (lock) {
        if (closed) {
          return;
        }
        long now = System.nanoTime();
        if (!stream.poll(now)) {
          return;
        }
        boolean heartbeatDue = now - lastHeartbeatNanos >= settings.heartbeatInterval().toNanos();
        // Read before the ring is: a heartbeat that says its records are current is so as of this time.
        long readAtNs = heartbeatDue ? clockNanos.getAsLong() : 0;
        boolean current = false;
        if (stream.isReady()) {
          announceGroups();
          DumpRequest dump = dumpRequests.poll();
          if (dump != null) {
            // Records first: when all of them are on the stream, a reply needs only say so (a hung job's rings
            // stand still, and thousands of ranks answering at once need not send them all again).
            current = shipDeltas(Long.MAX_VALUE);
          }
          for (; dump != null; dump = dumpRequests.poll()) {
            stream.send(RankMessage.newBuilder().setDumpReply(dump.getRecordsOnStreamOk() && current
                ? recordsOnStream(dump.getRequestId())
                : snapshot(dump.getRequestId(), dump.getMaxRecords())).build());
          }
          drainEvents();
          current = shipDeltas(Long.MAX_VALUE);
        }
        if (heartbeatDue) {
          lastHeartbeatNanos = now;
          // Sent after the records on the same stream, so the daemon has them all when it reads this.
          stream.send(RankMessage.newBuilder().setHeartbeat(Heartbeat.newBuilder()
              .setSentAtNs(readAtNs).addAllProgress(recorder.progress())
              .setDroppedRecords(droppedRecords).setRecordsCurrent(current)).build());
        }
      }
    } catch (RuntimeException e) {
      // A failing tick must never kill the periodic task: the stream is dropped and reconnected instead.
      log.warn("rank {}: reporter tick failed, reconnecting: {}", identity.getGlobalRank(), e.toString());
      synchronized (lock) {
        stream.reset("reporter error", e, System.nanoTime());
      }
    }
  }

  /** A new stream opens: the whole ring window is sent again on it, after this Hello. */
  private RankMessage onNewStream() {
    long next = recorder.nextRecordId();
    long oldest = Math.max(0, next - recorder.capacity());
    // Records never shipped and already overwritten are lost; count them before rewinding.
    countDroppedBelow(oldest);
    newCursor = oldest;
    openCount = 0;
    announcedGroups = recorder.processGroupCount();
    shippedStacks.clear();
    streamTemplates.clear();
    return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(identity)
        .addAllProcessGroups(recorder.processGroups()).setRingCapacity(recorder.capacity())
        .setDroppedRecords(droppedRecords)).build();
  }

  private void announceGroups() {
    int count = recorder.processGroupCount();
    if (count > announcedGroups) {
      ProcessGroupUpdate.Builder update = ProcessGroupUpdate.newBuilder();
      update.addAllProcessGroups(recorder.processGroups().subList(announcedGroups, count));
      stream.send(RankMessage.newBuilder().setProcessGroups(update).build());
      announcedGroups = count;
    }
  }

  private void drainEvents() {
    RankEvent event;
    while ((event = events.poll()) != null) {
      stream.send(RankMessage.newBuilder().setEvent(event).build());
    }
  }

  /**
   * Ships every record that is new or changed state since it was last shipped on this stream.
   *
   * @return true when every record of the ring was read and is shipped in its current state: none was being written,
   *     none left for the deadline
   */
  private boolean shipDeltas(long deadlineNanos) {
    boolean complete = true;
    RecordBatch.Builder batch = RecordBatch.newBuilder();
    // Records still in flight: ship again when their state moved on, forget once completed or overwritten.
    int kept = 0;
    for (int i = 0; i < openCount; i++) {
      long id = open[i];
      byte shippedState = (byte) (id >>> 56);
      long recordId = id & 0x00ff_ffff_ffff_ffffL;
      RecordRing.ReadResult read = recorder.tryRead(recordId, view);
      if (read == RecordRing.ReadResult.BUSY || read == RecordRing.ReadResult.PENDING) {
        // Being written right now: look again next tick rather than lose its state change.
        open[kept++] = id;
        complete = false;
        continue;
      }
      if (read == RecordRing.ReadResult.GONE) {
        continue;
      }
      if (view.state != shippedState) {
        addRecord(batch);
        flushIfFull(batch);
      }
      if (view.state != RecordRing.COMPLETED) {
        open[kept++] = ((long) view.state << 56) | recordId;
      }
    }
    openCount = kept;
    long next = recorder.nextRecordId();
    long oldest = Math.max(0, next - recorder.capacity());
    if (newCursor < oldest) {
      countDroppedBelow(oldest);
      newCursor = oldest;
    }
    for (; newCursor < next; newCursor++) {
      if (System.nanoTime() > deadlineNanos) {
        complete = false;
        break;
      }
      RecordRing.ReadResult read = recorder.tryRead(newCursor, view);
      if (read == RecordRing.ReadResult.BUSY || read == RecordRing.ReadResult.PENDING) {
        // Its writer has the id but has not filled the slot yet: ship it next tick, it is not lost.
        complete = false;
        break;
      }
      if (read == RecordRing.ReadResult.GONE) {
        countDroppedBelow(newCursor + 1);
        continue;
      }
      accountedUpTo = Math.max(accountedUpTo, newCursor + 1);
      addRecord(batch);
      flushIfFull(batch);
      if (view.state != RecordRing.COMPLETED) {
        if (openCount == open.length) {
          open = java.util.Arrays.copyOf(open, open.length * 2);
        }
        open[openCount++] = ((long) view.state << 56) | newCursor;
      }
    }
    if (batch.getRecordsCount() > 0) {
      stream.send(RankMessage.newBuilder().setRecords(batch.setDroppedRecords(droppedRecords)).build());
    }
    return complete;
  }

  /** Counts as dropped the records below {@code id} that were neither shipped nor counted yet. */
  private void countDroppedBelow(long id) {
    if (accountedUpTo < id) {
      droppedRecords += id - accountedUpTo;
      accountedUpTo = id;
    }
  }

  private void addRecord(RecordBatch.Builder batch) {
    if (stream.takesRecordTemplates()) {
      int id = streamTemplates.idOf(view);
      if (id > 0) {
        batch.addRecords(recorder.toProto(view, id));
        return;
      }
      if (id < 0) {
        CollectiveRecord full = recorder.toProto(view);
        shipFrames(full, shippedStacks, batch::addFrames);
        batch.addTemplates(RecordTemplates.of(-id, full));
        batch.addRecords(recorder.toProto(view, -id));
        return;
      }
    }
    CollectiveRecord record = recorder.toProto(view);
    shipFrames(record, shippedStacks, batch::addFrames);
    batch.addRecords(record);
  }

  /** Adds the frames of {@code record}'s stack unless {@code shipped} says they were sent already. */
  private void shipFrames(CollectiveRecord record, BitSet shipped, Consumer<InternedFrame> out) {
    if (record.getFrameIdsCount() > 0) {
      int stackId = FlightRecorder.stackOfFrame(record.getFrameIds(0));
      if (!shipped.get(stackId)) {
        shipped.set(stackId);
        for (int frameId : recorder.frameIdsOfStack(stackId)) {
          out.accept(InternedFrame.newBuilder().setId(frameId).setFrame(recorder.frame(frameId)).build());
        }
      }
    }
  }

  private void flushIfFull(RecordBatch.Builder batch) {
    if (batch.getRecordsCount() >= settings.maxBatchRecords()) {
      stream.send(RankMessage.newBuilder().setRecords(batch.setDroppedRecords(droppedRecords)).build());
      batch.clear();
    }
  }

  /** A reply saying every record of the ring is on the stream already, in its current state. */
  private DumpReply recordsOnStream(long requestId) {
    return DumpReply.newBuilder().setRequestId(requestId).setRecordsOnStream(true)
        .addAllProgress(recorder.progress()).setDroppedRecords(droppedRecords).build();
  }

  /** The ring's records, oldest first; only the newest {@code maxRecords} when that is positive. */
  private DumpReply snapshot(long requestId, int maxRecords) {
    DumpReply.Builder reply = DumpReply.newBuilder().setRequestId(requestId);
    BitSet stacks = new BitSet();
    long next = recorder.nextRecordId();
    long held = maxRecords > 0 ? Math.min(recorder.capacity(), maxRecords) : recorder.capacity();
    // Templates of a reply are its own: the daemon reads a reply apart from the stream's records.
    TemplateIds replyTemplates = stream.takesRecordTemplates() ? new TemplateIds() : null;
    for (long id = Math.max(0, next - held); id < next; id++) {
      if (!recorder.read(id, view)) {
        continue;
      }
      int template = replyTemplates == null ? 0 : replyTemplates.idOf(view);
      if (template > 0) {
        reply.addRecords(recorder.toProto(view, template));
        continue;
      }
      CollectiveRecord record = recorder.toProto(view);
      shipFrames(record, stacks, reply::addFrames);
      if (template < 0) {
        reply.addTemplates(RecordTemplates.of(-template, record));
        record = recorder.toProto(view, -template);
      }
      reply.addRecords(record);
    }
    return reply.addAllProgress(recorder.progress()).setDroppedRecords(droppedRecords).build();
  }

  /** Builds a {@link Reporter}; settings default to {@link ReporterSettings#defaults()}. */
  public static final class Builder {
    private final FlightRecorder recorder;
    private final RankIdentity identity;
    private final Channel channel;
    private ReporterSettings settings = ReporterSettings.defaults();
    private ScheduledExecutorService executor;
    private LongSupplier clockNanos = FlightRecorder::epochNanos;

    private Builder(FlightRecorder recorder, RankIdentity identity, Channel channel) {
      this.recorder = Objects.requireNonNull(recorder, "recorder");
      this.identity = Objects.requireNonNull(identity, "identity");
      this.channel = Objects.requireNonNull(channel, "channel");
    }

    public Builder settings(ReporterSettings settings) {
      this.settings = Objects.requireNonNull(settings, "settings");
      return this;
    }

    /** Share one executor between many reporters (as the simulator does); the caller then owns it. */
    public Builder executor(ScheduledExecutorService executor) {
      this.executor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    public Builder clock(LongSupplier epochNanos) {
      this.clockNanos = Objects.requireNonNull(epochNanos, "epochNanos");
      return this;
    }

    /** Starts the reporter: it connects in the background and keeps reconnecting until closed. */
    public Reporter start() {
      return new Reporter(this);
    }
  }

  static Duration positive(Duration d, String name) {
    Objects.requireNonNull(d, name);
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, got " + d);
    }
    return d;
  }
}
