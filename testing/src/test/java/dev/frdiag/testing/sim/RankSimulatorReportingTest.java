package dev.frdiag.testing.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.collector.reporter.Reporter;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.Welcome;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One loopback run proving the reporter wiring: every rank streams, a dead rank vanishes without Goodbye. */
class RankSimulatorReportingTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final FakeCollector collector = new FakeCollector();
  private Server server;
  private ManagedChannel channel;

  @BeforeEach
  void startServer() throws IOException {
    server = NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .addService(collector).build().start();
    channel = NettyChannelBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(),
        server.getPort())).usePlaintext().build();
  }

  @AfterEach
  void stopServer() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  @Test
  void deadRankStreamEndsWithoutGoodbyeWhileTheOthersSayGoodbyeOnClose() {
    Topology topology = Topology.builder().worldSize(4).ranksPerHost(4).tensorParallel(2).build();
    ReporterSettings fast = ReporterSettings.builder().maxBatchDelay(Duration.ofMillis(10))
        .heartbeatInterval(Duration.ofMillis(50)).build();
    RankSimulator sim = RankSimulator.builder().topology(topology).fault(Fault.deadRank(1, 1)).channel(channel)
        .jobId("loopback").reporterSettings(fast).build();
    try {
      await().atMost(WAIT).until(() -> collector.sessions.size() == 4
          && collector.sessions.values().stream().allMatch(s -> s.identity != null));
      await().atMost(WAIT).until(() -> sim.reporter(0).map(Reporter::isConnected).orElse(false)
          && sim.reporter(1).map(Reporter::isConnected).orElse(false));
      assertThat(collector.sessions.get(2).identity).isEqualTo(sim.identity(2));

      assertThat(sim.runSteps(5)).isEqualTo(1);
      assertThat(sim.isStalled()).isTrue();

      Session dead = collector.sessions.get(1);
      await().atMost(WAIT).until(() -> dead.ended);
      assertThat(dead.goodbye).isFalse();
      // The survivors keep streaming: rank 0's records of the stuck step reach the daemon.
      long issued = sim.recorder(0).nextRecordId();
      await().atMost(WAIT).until(() -> collector.sessions.get(0).records.get() >= issued);
    } finally {
      sim.close();
    }
    for (int rank : new int[] {0, 2, 3}) {
      Session session = collector.sessions.get(rank);
      await().atMost(WAIT).until(() -> session.ended);
      assertThat(session.goodbye).as("Goodbye from rank %d", rank).isTrue();
    }
    assertThat(collector.sessions.get(1).goodbye).isFalse();
  }

  /** What the fake daemon saw on one rank's stream. */
  private static final class Session {
    volatile RankIdentity identity;
    volatile boolean goodbye;
    volatile boolean ended;
    final AtomicLong records = new AtomicLong();
  }

  /** Welcomes every rank and remembers its stream by global rank. */
  private static final class FakeCollector extends CollectorGrpc.CollectorImplBase {
    final Map<Integer, Session> sessions = new ConcurrentHashMap<>();

    @Override
    public StreamObserver<RankMessage> connect(StreamObserver<DaemonMessage> responses) {
      Session session = new Session();
      return new StreamObserver<>() {
        @Override
        public void onNext(RankMessage message) {
          switch (message.getBodyCase()) {
            case HELLO -> {
              session.identity = message.getHello().getIdentity();
              sessions.put(session.identity.getGlobalRank(), session);
              responses.onNext(DaemonMessage.newBuilder()
                  .setWelcome(Welcome.newBuilder().setSessionId("s" + session.identity.getGlobalRank())).build());
            }
            case RECORDS -> session.records.addAndGet(message.getRecords().getRecordsCount());
            case GOODBYE -> session.goodbye = true;
            default -> { }
          }
        }

        @Override
        public void onError(Throwable t) {
          session.ended = true;
        }

        @Override
        public void onCompleted() {
          session.ended = true;
          responses.onCompleted();
        }
      };
    }
  }
}
