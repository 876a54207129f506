package dev.frdiag.collector.reporter;

import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.RankMessage;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rank's connection to the daemon's Collector service: opens a stream, says Hello, waits for the Welcome,
 * hands over dump requests, and after any failure reconnects with exponential backoff and ±20 % jitter.
 *
 * <p>Not thread-safe: its owner calls {@link #poll}, {@link #send}, {@link #finish} and {@link #abort} from one
 * thread (or under one lock); gRPC callbacks only set flags and call {@link Listener#onDumpRequest}.
 */
public final class RankStream {
  private static final Logger log = LoggerFactory.getLogger(RankStream.class);

  /** What the owner supplies and is told. */
  public interface Listener {
    /** Called from {@link #poll} each time a new stream opens: the Hello to send first. */
    RankMessage hello();

    /** Called on a gRPC thread when the daemon asks for a snapshot; must not block. */
    void onDumpRequest(DumpRequest request);
  }

  private final CollectorGrpc.CollectorStub stub;
  private final Channel channel;
  private final ReporterSettings settings;
  private final String name;
  private final Listener listener;
  private final AtomicLong welcomes = new AtomicLong();
  private final CompletableFuture<Void> firstWelcome = new CompletableFuture<>();
  private Call call;
  private long nextConnectAtNanos;
  private long backoffNanos;

  /**
   * @param name how logs name the rank, e.g. "rank 5"
   */
  public RankStream(Channel channel, ReporterSettings settings, String name, Listener listener) {
    this.channel = Objects.requireNonNull(channel, "channel");
    this.stub = CollectorGrpc.newStub(channel);
    this.settings = Objects.requireNonNull(settings, "settings");
    this.name = Objects.requireNonNull(name, "name");
    this.listener = Objects.requireNonNull(listener, "listener");
  }

  /**
   * Moves the connection along: notices failures, reconnects when the backoff has passed, gives up on a daemon
   * that does not welcome in time.
   *
   * @return true when a welcomed stream is open, so messages may be sent
   */
  public boolean poll(long nowNanos) {
    Call c = call;
    if (c != null && c.failed != null) {
      lost(c, nowNanos);
      c = null;
    }
    if (c == null) {
      if (nowNanos >= nextConnectAtNanos) {
        connect(nowNanos);
      }
      return false;
    }
    if (!c.welcomed) {
      if (nowNanos - c.openedAtNanos > settings.helloTimeout().toNanos()) {
        c.failed = Status.DEADLINE_EXCEEDED.withDescription("no Welcome within " + settings.helloTimeout());
        c.requests.cancel("no Welcome within " + settings.helloTimeout(), null);
        lost(c, nowNanos);
      }
      return false;
    }
    return true;
  }

  /** True when a welcomed stream can take a message without buffering (gRPC flow control). */
  public boolean isReady() {
    Call c = call;
    return c != null && c.welcomed && c.failed == null && c.requests.isReady();
  }

  /** True while a welcomed stream is open. */
  public boolean isWelcomed() {
    Call c = call;
    return c != null && c.welcomed && c.failed == null;
  }

  /** True when the daemon of the open stream reads records by template (CollectorConfig.record_templates). */
  public boolean takesRecordTemplates() {
    Call c = call;
    return c != null && c.recordTemplates;
  }

  /** Sends on the open stream; dropped when there is none (the owner re-sends what matters on reconnect). */
  public void send(RankMessage message) {
    Call c = call;
    if (c != null && c.failed == null) {
      c.requests.onNext(message);
    }
  }

  /**
   * Sends {@code goodbye} and half-closes the stream when one is open, welcomed or with its Hello still in flight
   * (the daemon reads the Hello first, then the Goodbye); cancels a stream that failed.
   */
  public void finish(RankMessage goodbye) {
    Call c = call;
    call = null;
    if (c == null) {
      return;
    }
    if (c.failed == null) {
      c.requests.onNext(goodbye);
      c.requests.onCompleted();
    } else {
      c.requests.cancel("closing", null);
    }
  }

  /** Ends the stream abruptly, without Goodbye (the daemon will consider the rank lost). */
  public void abort(String why) {
    Call c = call;
    call = null;
    if (c != null) {
      c.requests.cancel(why, null);
    }
  }

  /** Drops the current stream after an error on the owner's side, and reconnects later. */
  public void reset(String why, Throwable cause, long nowNanos) {
    Call c = call;
    if (c != null) {
      c.requests.cancel(why, cause);
      c.failed = Status.CANCELLED.withDescription(why);
      lost(c, nowNanos);
    }
  }

  /** Number of streams the daemon has welcomed so far. */
  public long welcomes() {
    return welcomes.get();
  }

  /** Completes when the daemon first welcomes this rank. */
  public CompletableFuture<Void> firstWelcome() {
    return firstWelcome;
  }

  private void connect(long nowNanos) {
    if (channel instanceof ManagedChannel managed) {
      // Our backoff decides when to retry; gRPC's own connect backoff (up to two minutes) must not add to it,
      // or a rank rejoins long after the daemon is back.
      managed.resetConnectBackoff();
    }
    Call c = new Call(nowNanos);
    call = c;
    stub.connect(c);
    c.requests.onNext(listener.hello());
  }

  private void lost(Call c, long nowNanos) {
    if (call == c) {
      call = null;
    }
    backoffNanos = backoffNanos == 0 ? settings.initialBackoff().toNanos()
        : Math.min(settings.maxBackoff().toNanos(), backoffNanos * 2);
    // Jitter keeps thousands of ranks from reconnecting in lockstep after a daemon restart.
    long jitter = (long) (backoffNanos * (ThreadLocalRandom.current().nextDouble(0.4) - 0.2));
    nextConnectAtNanos = nowNanos + backoffNanos + jitter;
    if (refused(c.failed)) {
      // Not an absent daemon but one that rejects what this side sends: retrying will not help on its own.
      log.warn("{}: the daemon refused the stream: {}: {}; retrying in {} ms", name, c.failed.getCode(),
          c.failed.getDescription(), (backoffNanos + jitter) / 1_000_000);
    } else {
      log.debug("{}: stream to daemon lost ({}), retrying in {} ms", name, c.failed,
          (backoffNanos + jitter) / 1_000_000);
    }
  }

  private static boolean refused(Status status) {
    if (status == null) {
      return false;
    }
    return switch (status.getCode()) {
      case INVALID_ARGUMENT, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, PERMISSION_DENIED, UNAUTHENTICATED,
          UNIMPLEMENTED -> true;
      default -> false;
    };
  }

  /** One Collector.Connect call; callbacks only flag state. */
  private final class Call implements ClientResponseObserver<RankMessage, DaemonMessage> {
    final long openedAtNanos;
    volatile ClientCallStreamObserver<RankMessage> requests;
    volatile boolean welcomed;
    /** The daemon's Welcome said it reads records by template. */
    volatile boolean recordTemplates;
    volatile Status failed;

    Call(long openedAtNanos) {
      this.openedAtNanos = openedAtNanos;
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<RankMessage> requestStream) {
      this.requests = requestStream;
    }

    @Override
    public void onNext(DaemonMessage message) {
      switch (message.getBodyCase()) {
        case WELCOME -> {
          recordTemplates = message.getWelcome().getConfig().getRecordTemplates();
          welcomed = true;
          // Reset from the callback thread is fine: only the next failure reads it, on the owner's thread.
          backoffNanos = 0;
          welcomes.incrementAndGet();
          firstWelcome.complete(null);
          log.debug("{}: welcomed by daemon, session {}", name, message.getWelcome().getSessionId());
        }
        case DUMP_REQUEST -> listener.onDumpRequest(message.getDumpRequest());
        default -> { }
      }
    }

    @Override
    public void onError(Throwable t) {
      failed = Status.fromThrowable(t);
    }

    @Override
    public void onCompleted() {
      failed = Status.UNAVAILABLE.withDescription("daemon closed the stream");
    }
  }
}
