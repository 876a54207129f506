package dev.frdiag.agent.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.Goodbye;
import dev.frdiag.proto.v1.NodeDownload;
import dev.frdiag.proto.v1.NodeUpload;
import dev.frdiag.proto.v1.RankFrame;
import dev.frdiag.proto.v1.RankMessage;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A daemon slower than its ranks: the relay holds a bounded amount, holds its ranks back, and loses nothing. */
class NodeRelayBackpressureTest {
  private static final int MESSAGES = 40;
  private static final int MESSAGE_BYTES = 1 << 20;

  private final ScheduledExecutorService flushes = Executors.newSingleThreadScheduledExecutor();
  private final String daemonName = InProcessServerBuilder.generateName();
  private final List<RankFrame> received = new CopyOnWriteArrayList<>();
  private final AtomicReference<ServerCallStreamObserver<NodeDownload>> nodeCall = new AtomicReference<>();
  private Server daemon;
  private ManagedChannel toDaemon;
  private InProcessRelay relay;

  @AfterEach
  void stop() throws Exception {
    if (relay != null) {
      relay.close();
    }
    toDaemon.shutdownNow();
    daemon.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    flushes.shutdownNow();
  }

  @Test
  void aDaemonThatTakesNothingHoldsTheRanksBackAndGetsEverythingOnceItReads() throws Exception {
    // A daemon that reads node uploads only when the test lets it.
    daemon = InProcessServerBuilder.forName(daemonName).addService(new CollectorGrpc.CollectorImplBase() {
      @Override
      public StreamObserver<NodeUpload> connectNode(StreamObserver<NodeDownload> responses) {
        ServerCallStreamObserver<NodeDownload> call = (ServerCallStreamObserver<NodeDownload>) responses;
        call.disableAutoRequest();
        nodeCall.set(call);
        return new StreamObserver<>() {
          @Override
          public void onNext(NodeUpload upload) {
            received.addAll(upload.getFramesList());
          }

          @Override
          public void onError(Throwable t) {
          }

          @Override
          public void onCompleted() {
          }
        };
      }
    }).build().start();
    toDaemon = InProcessChannelBuilder.forName(daemonName).build();
    relay = InProcessRelay.start(toDaemon, "node07", flushes, 4 << 20);

    // One rank that sends 40 MiB as fast as its stream takes them.
    StreamObserver<RankMessage> rank = CollectorGrpc.newStub(relay.channel()).connect(new StreamObserver<DaemonMessage>() {
      @Override
      public void onNext(DaemonMessage value) {
      }

      @Override
      public void onError(Throwable t) {
      }

      @Override
      public void onCompleted() {
      }
    });
    for (int i = 0; i < MESSAGES; i++) {
      rank.onNext(RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder()
          .setReason(i + ":" + "x".repeat(MESSAGE_BYTES))).build());
    }

    await().atMost(Duration.ofSeconds(10)).until(() -> relay.pendingBytes() >= NodeRelay.MAX_PENDING_BYTES);
    // Held back: at most one message over the limit, the one whose arrival crossed it.
    assertThat(relay.pendingBytes()).isLessThanOrEqualTo(NodeRelay.MAX_PENDING_BYTES + MESSAGE_BYTES + 64);
    assertThat(received).isEmpty();

    await().atMost(Duration.ofSeconds(10)).until(() -> nodeCall.get() != null);
    nodeCall.get().request(Integer.MAX_VALUE);
    await().atMost(Duration.ofSeconds(20)).until(() -> received.size() == MESSAGES);
    for (int i = 0; i < MESSAGES; i++) {
      assertThat(received.get(i).getMessage().getGoodbye().getReason()).startsWith(i + ":");
    }
    assertThat(relay.pendingBytes()).isZero();
  }
}
