package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.access.Security;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.Goodbye;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job is bound to the writers that registered its ranks: once its streams have ended nobody else can register its
 * ranks with a fabricated ring, nor hold it in another shape so that the real ranks are refused. Without an access
 * file the writer is the host a stream comes from (the tests call from 127.0.0.1, 127.0.0.2 and 127.0.0.3); with
 * one, the principal.
 */
class JobWritersTest {
  private static final String DENIED = "job 'j' is bound to the writers that registered its ranks, and none of its "
      + "ranks is connected: only they may write it again";

  @TempDir
  Path dataDir;

  private Daemon daemon;
  private final List<ManagedChannel> channels = new ArrayList<>();

  @AfterEach
  void stop() throws InterruptedException {
    for (ManagedChannel c : channels) {
      c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (daemon != null) {
      daemon.close();
    }
  }

  private void start(Path access) {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .security(new Security(null, null, null, access, false)).build()).start();
  }

  /** A plaintext channel to the daemon from the loopback address 127.0.0.{@code host}, with a token or none. */
  private ManagedChannel from(int host, String token) {
    NettyChannelBuilder b = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext()
        .localSocketPicker(new NettyChannelBuilder.LocalSocketPicker() {
          @Override
          public SocketAddress createSocketAddress(SocketAddress remote, io.grpc.Attributes attrs) {
            return new InetSocketAddress("127.0.0." + host, 0);
          }
        });
    if (token != null) {
      b.intercept(io.grpc.stub.MetadataUtils.newAttachHeadersInterceptor(bearer(token)));
    }
    ManagedChannel c = b.build();
    channels.add(c);
    return c;
  }

  private static io.grpc.Metadata bearer(String token) {
    io.grpc.Metadata m = new io.grpc.Metadata();
    m.put(dev.frdiag.proto.BearerToken.HEADER, "Bearer " + token);
    return m;
  }

  private static RankMessage hello(int rank, int worldSize) {
    ProcessGroup.Builder g = ProcessGroup.newBuilder().setName("0").setGlobalRankStride(1);
    for (int r = 0; r < worldSize; r++) {
      g.addRanks(r);
    }
    return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder().setJobId("j")
        .setGlobalRank(rank).setWorldSize(worldSize).setHostname("node" + rank / 2).setPid(100 + rank))
        .addProcessGroups(g)).build();
  }

  private static final RankMessage GOODBYE = RankMessage.newBuilder().setGoodbye(Goodbye.newBuilder()
      .setReason("training done")).build();

  private int connected() {
    return daemon.registry().find("j").map(job -> job.summary().getRanksConnected()).orElse(0);
  }

  /** Ranks 0-3 of job j, ranks 0-1 from {@code first}, 2-3 from {@code second}: all welcomed. */
  private List<RankConnection> job(ManagedChannel first, ManagedChannel second) throws Exception {
    List<RankConnection> ranks = new ArrayList<>();
    for (int r = 0; r < 4; r++) {
      RankConnection rank = new RankConnection(r < 2 ? first : second).send(hello(r, 4));
      assertThat(rank.next().hasWelcome()).as("rank %d welcomed", r).isTrue();
      ranks.add(rank);
    }
    return ranks;
  }

  private void end(List<RankConnection> ranks) {
    ranks.forEach(r -> r.send(GOODBYE));
    await().atMost(Duration.ofSeconds(10)).until(() -> connected() == 0);
  }

  @Test
  void withoutAnAccessFileAnotherHostCannotTakeAnEndedJobsRanksNorLockItOut() throws Exception {
    start(null);
    // A job on two hosts: the second joins while the first one's ranks are connected.
    end(job(from(1, null), from(2, null)));

    RankConnection framer = new RankConnection(from(3, null)).send(hello(0, 4));
    Status framed = framer.end();
    assertThat(framed.getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
    assertThat(framed.getDescription()).isEqualTo(DENIED);
    Status shaped = new RankConnection(from(3, null)).send(hello(0, 8)).end();
    assertThat(shaped.getCode()).as("a rank 0 of another world size").isEqualTo(Status.Code.PERMISSION_DENIED);

    // The job's own hosts come back, with its shape.
    job(from(1, null), from(2, null));
    assertThat(connected()).isEqualTo(4);
    assertThat(daemon.registry().find("j").orElseThrow().summary().getWorldSize()).isEqualTo(4);
  }

  @Test
  void withAnAccessFileAnotherWriterCannotTakeAnEndedJobsRanks() throws Exception {
    Path access = dataDir.resolve("access.json");
    Files.writeString(access, """
        {"principals": [
          {"name": "agents-j", "token_sha256": "%s", "writer": ["j"]},
          {"name": "fleet", "token_sha256": "%s", "writer": ["*"]}]}""".formatted(AccessRules.sha256("job-token"),
        AccessRules.sha256("fleet-token")));
    start(access);
    end(job(from(1, "job-token"), from(2, "job-token")));

    Status framed = new RankConnection(from(1, "fleet-token")).send(hello(0, 8)).end();
    assertThat(framed.getCode()).as("a writer of every job, but not of this one's ranks")
        .isEqualTo(Status.Code.PERMISSION_DENIED);
    assertThat(framed.getDescription()).isEqualTo(DENIED);

    job(from(3, "job-token"), from(3, "job-token"));
    assertThat(connected()).as("the job's own token, from any host").isEqualTo(4);
  }
}
