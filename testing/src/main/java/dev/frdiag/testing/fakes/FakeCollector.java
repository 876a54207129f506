package dev.frdiag.testing.fakes;

import dev.frdiag.proto.v1.CollectorConfig;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.ContextAck;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.Welcome;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/** A daemon stand-in on loopback: welcomes every stream, keeps what each rank sent, asks ranks for dumps. */
public final class FakeCollector extends CollectorGrpc.CollectorImplBase implements AutoCloseable {
  /** Everything received, by global rank, across all of the rank's streams. */
  public final Map<Integer, List<RankMessage>> received = new ConcurrentHashMap<>();
  /** Node context posted through ReportContext, oldest first. */
  public final List<NodeContext> contexts = new CopyOnWriteArrayList<>();
  /**
   * Each rank's newest stream. An observer is its own lock: gRPC's observers are not thread-safe, and the test
   * thread (dump requests) and gRPC's threads (welcomes, completion) both send on it.
   */
  private final Map<Integer, StreamObserver<DaemonMessage>> streams = new ConcurrentHashMap<>();
  private final Server server;
  private final boolean recordTemplates;

  /** A stand-in for a daemon that reads only whole records (CollectorConfig.record_templates unset). */
  public FakeCollector() throws IOException {
    this(false);
  }

  /** @param recordTemplates whether its Welcome says it reads records by template */
  public FakeCollector(boolean recordTemplates) throws IOException {
    this.recordTemplates = recordTemplates;
    server = NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .addService(this).build().start();
  }

  public int port() {
    return server.getPort();
  }

  /** What {@code rank} sent of one kind, oldest first. */
  public List<RankMessage> of(int rank, RankMessage.BodyCase kind) {
    return received.getOrDefault(rank, List.of()).stream().filter(m -> m.getBodyCase() == kind).toList();
  }

  public void requestDump(int rank, long requestId, long deadlineMs) {
    requestDump(rank, requestId, deadlineMs, 0);
  }

  /** Asks {@code rank} for a snapshot of at most its newest {@code maxRecords} records (0: all). */
  public void requestDump(int rank, long requestId, long deadlineMs, int maxRecords) {
    requestDump(rank, DumpRequest.newBuilder().setRequestId(requestId).setReason("test").setDeadlineMs(deadlineMs)
        .setMaxRecords(maxRecords).build());
  }

  /** Sends {@code request} to {@code rank}. */
  public void requestDump(int rank, DumpRequest request) {
    StreamObserver<DaemonMessage> s = streams.get(rank);
    synchronized (s) {
      s.onNext(DaemonMessage.newBuilder().setDumpRequest(request).build());
    }
  }

  @Override
  public void reportContext(NodeContext node,
      StreamObserver<ContextAck> out) {
    contexts.add(node);
    out.onNext(ContextAck.getDefaultInstance());
    out.onCompleted();
  }

  @Override
  public StreamObserver<RankMessage> connect(StreamObserver<DaemonMessage> responses) {
    return new StreamObserver<>() {
      int rank = -1;

      @Override
      public void onNext(RankMessage message) {
        if (message.hasHello()) {
          rank = message.getHello().getIdentity().getGlobalRank();
          streams.put(rank, responses);
          synchronized (responses) {
            responses.onNext(DaemonMessage.newBuilder().setWelcome(Welcome.newBuilder().setSessionId("s" + rank)
                .setConfig(CollectorConfig.newBuilder().setRecordTemplates(recordTemplates))).build());
          }
        }
        received.computeIfAbsent(rank, r -> new CopyOnWriteArrayList<>()).add(message);
      }

      @Override
      public void onError(Throwable t) {
        // The agent went away.
      }

      @Override
      public void onCompleted() {
        synchronized (responses) {
          responses.onCompleted();
        }
      }
    };
  }

  @Override
  public void close() {
    try {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
