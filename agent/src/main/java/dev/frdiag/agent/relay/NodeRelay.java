package dev.frdiag.agent.relay;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.proto.StreamEnds;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.ContextAck;
import dev.frdiag.proto.v1.DaemonFrame;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.NodeDownload;
import dev.frdiag.proto.v1.NodeUpload;
import dev.frdiag.proto.v1.RankFrame;
import dev.frdiag.proto.v1.RankMessage;
import io.grpc.Channel;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Collector service as a node's ranks see it, relayed: each rank's Connect stream becomes frames on one
 * ConnectNode stream to the daemon, sent in batches at most {@code flushDelay} after the first frame waiting. What
 * the daemon answers goes back to the rank it names. The node stream is opened when the first rank connects and,
 * once lost, again when a rank reconnects; losing it ends every rank stream (UNAVAILABLE), and the ranks reconnect
 * on their own backoff, as they would to a daemon that restarted.
 *
 * <p>Thread-safe. Rank streams arrive on the relay's server threads, the daemon's frames on the upstream channel's
 * threads; sends to the daemon are made only by the flush task, one at a time.
 */
public final class NodeRelay extends CollectorGrpc.CollectorImplBase {
  private static final Logger log = LoggerFactory.getLogger(NodeRelay.class);

  /** How long a frame may wait for others to share its batch by default. */
  public static final Duration DEFAULT_FLUSH_DELAY = Duration.ofMillis(20);
  /** Batches are cut at this size; one larger message still goes, alone. */
  static final int MAX_BATCH_BYTES = 1 << 20;
  /**
   * Bytes a node stream holds for a daemon that takes them in slower than its ranks send: past this, the relay stops
   * reading from its ranks, whose reporters then keep their records in their own bounded rings.
   */
  static final long MAX_PENDING_BYTES = 16L << 20;

  private final Channel daemon;
  private final String node;
  private final ScheduledExecutorService executor;
  private final long flushDelayNanos;
  private final int maxMessageBytes;
  private final Object lock = new Object();
  @GuardedBy("lock")
  private NodeStream current;

  /**
   * @param daemon the daemon's Collector service
   * @param node how logs name this node
   * @param executor runs the flushes; shared by many relays in one process if need be
   * @param flushDelay the longest a rank's message waits for others before it is sent
   * @param maxMessageBytes largest rank message relayed; a larger one ends that rank's stream (RESOURCE_EXHAUSTED),
   *     as the daemon itself would
   */
  public NodeRelay(Channel daemon, String node, ScheduledExecutorService executor, Duration flushDelay,
      int maxMessageBytes) {
    this.daemon = Objects.requireNonNull(daemon, "daemon");
    this.node = Objects.requireNonNull(node, "node");
    this.executor = Objects.requireNonNull(executor, "executor");
    if (flushDelay.isNegative()) {
      throw new IllegalArgumentException("flushDelay must not be negative, got " + flushDelay);
    }
    this.flushDelayNanos = flushDelay.toNanos();
    if (maxMessageBytes <= 0) {
      throw new IllegalArgumentException("maxMessageBytes must be positive, got " + maxMessageBytes);
    }
    this.maxMessageBytes = maxMessageBytes;
  }

  @Override
  public StreamObserver<RankMessage> connect(StreamObserver<DaemonMessage> toRank) {
    NodeStream stream;
    synchronized (lock) {
      if (current == null || current.lost) {
        NodeStream opened = new NodeStream();
        current = opened;
        // Not in this rank's call context: the node stream must outlive the rank whose call happened to open it.
        Context.current().fork().run(() -> CollectorGrpc.newStub(daemon).connectNode(opened));
        log.debug("{}: node stream to the daemon opened", node);
      }
      stream = current;
    }
    return stream.attach((ServerCallStreamObserver<DaemonMessage>) toRank);
  }

  @Override
  public void reportContext(NodeContext context, StreamObserver<ContextAck> out) {
    CollectorGrpc.newStub(daemon).reportContext(context, out);
  }

  /**
   * Sends what is waiting now and half-closes the node stream: ranks that said goodbye are finished for the
   * daemon, the others lost. Rank streams opened afterwards open a new node stream.
   */
  public void finish() {
    NodeStream stream;
    synchronized (lock) {
      stream = current;
      current = null;
    }
    if (stream != null) {
      stream.finish();
    }
  }

  /** Bytes the current node stream holds for the daemon. */
  long pendingBytes() {
    synchronized (lock) {
      return current == null ? 0 : current.pendingBytes();
    }
  }

  /** Rank streams open on the current node stream. */
  public int rankStreams() {
    synchronized (lock) {
      return current == null ? 0 : current.ranks.size();
    }
  }

  /** One ConnectNode call and the rank streams it carries. */
  private final class NodeStream implements ClientResponseObserver<NodeUpload, NodeDownload> {
    final Map<Integer, RankStream> ranks = new ConcurrentHashMap<>();
    final Queue<RankFrame> pending = new ConcurrentLinkedQueue<>();
    final AtomicLong pendingBytes = new AtomicLong();
    /** Ranks not read from while {@link #pendingBytes} is over the limit, each owed one request for a message. */
    final Queue<RankStream> held = new ConcurrentLinkedQueue<>();
    final AtomicBoolean flushScheduled = new AtomicBoolean();
    @GuardedBy("lock")
    int nextId;
    volatile boolean lost;
    volatile ClientCallStreamObserver<NodeUpload> upload;

    @Override
    public void beforeStart(ClientCallStreamObserver<NodeUpload> requests) {
      upload = requests;
      // The daemon can take more: send what waited for it.
      requests.setOnReadyHandler(() -> executor.execute(() -> flush(false)));
    }

    RankStream attach(ServerCallStreamObserver<DaemonMessage> toRank) {
      int id;
      synchronized (lock) {
        id = nextId++;
      }
      RankStream rank = new RankStream(this, id, toRank);
      ranks.put(id, rank);
      if (lost) {
        // Lost between its opening and this rank: the rank retries, and the next attempt opens a new one.
        rank.end(Status.UNAVAILABLE.withDescription("node relay " + node + " lost its stream to the daemon"));
      }
      return rank;
    }

    void enqueue(RankFrame frame) {
      if (lost) {
        return;
      }
      pendingBytes.addAndGet(frame.getSerializedSize());
      pending.add(frame);
      if (flushScheduled.compareAndSet(false, true)) {
        executor.schedule(() -> flush(false), flushDelayNanos, TimeUnit.NANOSECONDS);
      }
    }

    /**
     * Sends what waits, in batches, while the daemon takes more ({@code force}: all of it, on closing); then reads
     * again from the ranks held back.
     */
    private void flush(boolean force) {
      flushScheduled.set(false);
      synchronized (this) {
        if (lost) {
          pending.clear();
          pendingBytes.set(0);
        } else {
          while (!pending.isEmpty() && (force || upload.isReady())) {
            NodeUpload.Builder batch = NodeUpload.newBuilder();
            int bytes = 0;
            for (RankFrame frame; bytes < MAX_BATCH_BYTES && (frame = pending.poll()) != null; ) {
              batch.addFrames(frame);
              int size = frame.getSerializedSize();
              bytes += size;
              pendingBytes.addAndGet(-size);
            }
            send(batch.build());
          }
        }
      }
      releaseHeld();
    }

    /** Reads again from the ranks held back, while what waits is under the limit. */
    void releaseHeld() {
      for (RankStream rank; pendingBytes.get() < MAX_PENDING_BYTES && (rank = held.poll()) != null; ) {
        rank.readNext();
      }
    }

    /** Bytes waiting for the daemon. */
    long pendingBytes() {
      return pendingBytes.get();
    }

    void finish() {
      flush(true);
      synchronized (this) {
        if (!lost) {
          lost = true;
          upload.onCompleted();
        }
      }
    }

    @GuardedBy("this")
    private void send(NodeUpload batch) {
      try {
        upload.onNext(batch);
      } catch (RuntimeException e) {
        // The call ended under us; onError follows and ends the rank streams.
        log.debug("{}: send on the node stream failed: {}", node, e.toString());
      }
    }

    @Override
    public void onNext(NodeDownload download) {
      for (DaemonFrame frame : download.getFramesList()) {
        RankStream rank = ranks.get(frame.getStream());
        if (rank == null) {
          continue;
        }
        switch (frame.getBodyCase()) {
          case MESSAGE -> rank.toRank(frame.getMessage());
          case CLOSED -> {
            // The daemon ended it: end the rank's call, and tell the daemon this stream is gone on our side too.
            ranks.remove(frame.getStream());
            rank.end(StreamEnds.status(frame.getClosed()));
            enqueue(closedFrame(frame.getStream(), Status.CANCELLED.withDescription("ended by the daemon")));
          }
          default -> { }
        }
      }
    }

    @Override
    public void onError(Throwable t) {
      lose(Status.fromThrowable(t));
    }

    @Override
    public void onCompleted() {
      lose(Status.UNAVAILABLE.withDescription("the daemon closed the node stream"));
    }

    private void lose(Status why) {
      lost = true;
      if (ranks.isEmpty()) {
        log.debug("{}: idle node stream to the daemon ended ({})", node, why.getCode());
        return;
      }
      log.warn("{}: node stream to the daemon lost ({}: {}); its {} rank streams end and reconnect", node,
          why.getCode(), why.getDescription(), ranks.size());
      List<RankStream> gone = new ArrayList<>(ranks.values());
      ranks.clear();
      for (RankStream rank : gone) {
        rank.end(Status.UNAVAILABLE.withDescription("node relay " + node + " lost its stream to the daemon: "
            + why.getCode()));
      }
    }
  }

  /** One rank's Connect call to this relay: its messages become frames on the node stream. */
  private final class RankStream implements StreamObserver<RankMessage> {
    private final NodeStream stream;
    private final int id;
    @GuardedBy("this")
    private final ServerCallStreamObserver<DaemonMessage> toRank;
    @GuardedBy("this")
    private boolean ended;

    RankStream(NodeStream stream, int id, ServerCallStreamObserver<DaemonMessage> toRank) {
      this.stream = stream;
      this.id = id;
      this.toRank = toRank;
      // One message at a time, each asked for once the last is queued: how a slow daemon holds the ranks back.
      toRank.disableAutoRequest();
      toRank.request(1);
    }

    /** Asks the rank for its next message. */
    synchronized void readNext() {
      if (ended) {
        return;
      }
      try {
        toRank.request(1);
      } catch (RuntimeException e) {
        // The rank's call has ended; nothing more will come from it.
        ended = true;
      }
    }

    @Override
    public void onNext(RankMessage message) {
      int size = message.getSerializedSize();
      if (size > maxMessageBytes) {
        Status refused = Status.RESOURCE_EXHAUSTED.withDescription(message.getBodyCase() + " message of " + size
            + " bytes exceeds the limit of " + maxMessageBytes + " bytes; send smaller batches");
        stream.ranks.remove(id);
        end(refused);
        stream.enqueue(closedFrame(id, refused));
        return;
      }
      stream.enqueue(RankFrame.newBuilder().setStream(id).setMessage(message).build());
      if (stream.pendingBytes.get() < MAX_PENDING_BYTES) {
        readNext();
      } else {
        stream.held.add(this);
        // A flush may have drained the queue between the check and the add.
        stream.releaseHeld();
      }
    }

    @Override
    public void onError(Throwable t) {
      // The rank's process or connection went away: the daemon must count it lost, as with a direct stream.
      if (stream.ranks.remove(id) != null) {
        Status status = Status.fromThrowable(t);
        stream.enqueue(closedFrame(id, status.isOk() ? Status.CANCELLED : status));
      }
    }

    @Override
    public void onCompleted() {
      if (stream.ranks.remove(id) != null) {
        stream.enqueue(closedFrame(id, Status.OK));
      }
      end(Status.OK);
    }

    synchronized void toRank(DaemonMessage message) {
      if (ended || toRank.isCancelled()) {
        return;
      }
      try {
        toRank.onNext(message);
      } catch (RuntimeException e) {
        ended = true;
      }
    }

    synchronized void end(Status status) {
      if (ended) {
        return;
      }
      ended = true;
      try {
        if (status.isOk()) {
          toRank.onCompleted();
        } else {
          toRank.onError(status.asRuntimeException());
        }
      } catch (RuntimeException ignored) {
        // The rank has already gone.
      }
    }
  }

  private static RankFrame closedFrame(int stream, Status status) {
    return RankFrame.newBuilder().setStream(stream).setClosed(StreamEnds.closed(status)).build();
  }
}
