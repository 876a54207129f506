package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.RecordBatch;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The production transport over loopback TCP: the message size limits a rank meets on a real connection. */
class NettyTransportTest {
  private static final int LIMIT = 256 * 1024;

  @TempDir
  Path dataDir;

  private Daemon daemon;
  private ManagedChannel channel;

  @BeforeEach
  void start() {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .maxMessageBytes(LIMIT).build()).start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext()
        .maxInboundMessageSize(16 * 1024 * 1024).build();
  }

  @AfterEach
  void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    daemon.close();
  }

  /** Sends a Hello and then a batch with one record whose op name is {@code opBytes} long; returns how it ended. */
  private Status sendBatchOf(int opBytes) throws Exception {
    RankMessage hello = RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
        .setJobId("big").setWorldSize(1).setHostname("node0").setPid(1)).addProcessGroups(ProcessGroup.newBuilder()
        .setName("0").addRanks(0).setGlobalRankStride(1))).build();
    RankMessage batch = RankMessage.newBuilder().setRecords(RecordBatch.newBuilder().addRecords(CollectiveRecord
        .newBuilder().setRecordId(1).setProcessGroup("0").setOp("x".repeat(opBytes)).setTimeCreatedNs(1))).build();
    return RankConnection.send(channel, hello, batch).get(10, TimeUnit.SECONDS);
  }

  @Test
  void batchOverTheDaemonsLimitIsRefusedWithAnExplanationRatherThanAConnectionReset() throws Exception {
    Status status = sendBatchOf(LIMIT + 1024);
    assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription()).matches("RECORDS message of \\d+ bytes exceeds the daemon's limit of "
        + LIMIT + " bytes; send smaller batches");
  }

  @Test
  void frameFarOverTheLimitIsCutByTheTransport() throws Exception {
    // Past the transport's own limit (twice the daemon's plus 64 KiB) the server resets the stream before the
    // service sees the message; without that limit Netty's 4 MiB default would let it through to the service.
    Status status = sendBatchOf(4 * LIMIT);
    assertThat(status.getCode()).isEqualTo(Status.Code.CANCELLED);
    assertThat(String.valueOf(status.getDescription())).doesNotContain("send smaller batches");
  }
}
