package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.frdiag.command.ClientSecurity;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.access.Security;
import dev.frdiag.daemon.access.ServerTls;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetJobStatusRequest;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.proto.v1.ListJobsRequest;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.testing.tls.TestCertificates;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * TLS, mutual TLS and the per-job roles of the access file, on a real Netty daemon on 127.0.0.1: what a stranger,
 * another job's agent, a reader and an operator can and cannot do.
 */
class SecurityTest {
  @TempDir
  static Path certs;

  @TempDir
  Path dataDir;

  private static TestCertificates ca;
  private static Path[] server;
  private static Path[] agentCert;

  private static final String WRITER_A = "token-writer-of-job-a";
  private static final String READER_A = "token-reader-of-job-a";
  private static final String OPERATOR_A = "token-operator-of-job-a";
  private static final String WRITER_B = "token-writer-of-job-b";

  private Daemon daemon;
  private final List<ManagedChannel> channels = new java.util.ArrayList<>();

  @BeforeAll
  static void makeCertificates() throws Exception {
    ca = TestCertificates.authority(certs, "frdiag");
    server = ca.server("daemon");
    agentCert = ca.client("agent", "agent-node01");
  }

  @AfterEach
  void stop() {
    channels.forEach(ManagedChannel::shutdownNow);
    if (daemon != null) {
      daemon.close();
    }
  }

  private Path accessFile(String extra) throws Exception {
    Path f = dataDir.resolve("access.json");
    Files.writeString(f, """
        {"principals": [
          {"name": "agents-a", "token_sha256": "%s", "writer": ["a"]},
          {"name": "viewer-a", "token_sha256": "%s", "reader": ["a"]},
          {"name": "oncall-a", "token_sha256": "%s", "reader": ["a"], "operator": ["a"]},
          {"name": "agents-b", "token_sha256": "%s", "writer": ["b"]},
          {"name": "node01", "certificate": "CN=agent-node01", "writer": ["a"]}%s
        ]}""".formatted(AccessRules.sha256(WRITER_A), AccessRules.sha256(READER_A), AccessRules.sha256(OPERATOR_A),
        AccessRules.sha256(WRITER_B), extra));
    return f;
  }

  private Daemon start(Path clientCa, Path access) {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).dataDir(dataDir)
        .security(new Security(server[0], server[1], clientCa, access, false)).build()).start();
    return daemon;
  }

  private ManagedChannel channel(String token, Path[] clientCert) throws Exception {
    Path tokenFile = null;
    if (token != null) {
      tokenFile = Files.createTempFile(dataDir, "token", "");
      Files.writeString(tokenFile, token + "\n");
    }
    ClientSecurity s = ClientSecurity.of(ca.caCertificate(), clientCert == null ? null : clientCert[0],
        clientCert == null ? null : clientCert[1], tokenFile);
    ManagedChannel c = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port(), s.credentials()).build();
    channels.add(c);
    return c;
  }

  private static RankMessage hello(String job, int rank, int worldSize) {
    ProcessGroup.Builder g = ProcessGroup.newBuilder().setName("0").setGlobalRankStride(1);
    for (int r = 0; r < worldSize; r++) {
      g.addRanks(r);
    }
    return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder().setJobId(job)
        .setGlobalRank(rank).setWorldSize(worldSize).setHostname("node0").setPid(100 + rank)).addProcessGroups(g))
        .build();
  }

  private static JobSummary status(ManagedChannel c, String job) {
    return DiagnosisGrpc.newBlockingStub(c).withDeadlineAfter(5, TimeUnit.SECONDS)
        .getJobStatus(GetJobStatusRequest.newBuilder().setJobId(job).build()).getSummary();
  }

  private static Status.Code code(Runnable call) {
    try {
      call.run();
      return Status.Code.OK;
    } catch (StatusRuntimeException e) {
      return e.getStatus().getCode();
    }
  }

  @Test
  void tlsServesAndPlaintextIsRefused() throws Exception {
    start(null, null);
    ManagedChannel tls = channel(null, null);
    assertThat(HealthGrpc.newBlockingStub(tls).withDeadlineAfter(5, TimeUnit.SECONDS)
        .check(HealthCheckRequest.getDefaultInstance()).getStatus().name()).isEqualTo("SERVING");

    ManagedChannel plain = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
    channels.add(plain);
    StatusRuntimeException refused = org.junit.jupiter.api.Assertions.assertThrows(StatusRuntimeException.class,
        () -> HealthGrpc.newBlockingStub(plain).withDeadlineAfter(5, TimeUnit.SECONDS)
            .check(HealthCheckRequest.getDefaultInstance()));
    assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(refused.getStatus().getDescription()).as("the client is told why, not only that it failed")
        .isEqualTo("this port speaks TLS: connect with TLS (--tls-ca)");
  }

  @Test
  void mutualTlsRefusesAClientWithoutACertificateAndKnowsOneWithIt() throws Exception {
    start(ca.caCertificate(), accessFile(""));
    assertThat(code(() -> status(channelUnchecked(null, null), "a"))).isEqualTo(Status.Code.UNAVAILABLE);

    // The certificate's subject is an identity of the access file: a writer of job a.
    RankConnection agent = new RankConnection(channel(null, agentCert)).send(hello("a", 0, 1));
    assertThat(agent.next().hasWelcome()).isTrue();
  }

  private ManagedChannel channelUnchecked(String token, Path[] cert) {
    try {
      return channel(token, cert);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aWriterOfAnotherJobCannotFrameARankNorReadNorTrigger() throws Exception {
    start(null, accessFile(""));
    RankConnection realRank = new RankConnection(channel(WRITER_A, null)).send(hello("a", 0, 2));
    assertThat(realRank.next().hasWelcome()).isTrue();

    // Job b's agent claims a rank of job a, with a fake ring: refused, job a untouched.
    Status framing = new RankConnection(channel(WRITER_B, null)).send(hello("a", 1, 2)).end();
    assertThat(framing.getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
    assertThat(framing.getDescription()).isEqualTo("agents-b may not write to job 'a' (role writer for it needed)");
    ManagedChannel oncall = channel(OPERATOR_A, null);
    assertThat(status(oncall, "a").getRanksConnected()).isEqualTo(1);
    assertThat(status(oncall, "a").getRanksLost()).isZero();

    ManagedChannel writerB = channel(WRITER_B, null);
    assertThat(code(() -> status(writerB, "a"))).isEqualTo(Status.Code.PERMISSION_DENIED);
    assertThat(code(() -> DiagnosisGrpc.newBlockingStub(writerB).withDeadlineAfter(5, TimeUnit.SECONDS)
        .diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId("a").build()))).isEqualTo(Status.Code.PERMISSION_DENIED);
    assertThat(DiagnosisGrpc.newBlockingStub(writerB).listJobs(ListJobsRequest.getDefaultInstance()).getJobsList())
        .as("jobs it may not read are not listed").isEmpty();
  }

  @Test
  void aReaderReadsButOnlyAnOperatorTriggersAndNobodyUnknownGetsIn() throws Exception {
    start(null, accessFile(""));
    new RankConnection(channel(WRITER_A, null)).send(hello("a", 0, 1)).next();

    ManagedChannel reader = channel(READER_A, null);
    assertThat(status(reader, "a").getRanksConnected()).isEqualTo(1);
    assertThat(code(() -> DiagnosisGrpc.newBlockingStub(reader).withDeadlineAfter(5, TimeUnit.SECONDS)
        .diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId("a").build()))).isEqualTo(Status.Code.PERMISSION_DENIED);
    ManagedChannel writer = channel(WRITER_A, null);
    assertThat(code(() -> status(writer, "a"))).as("a writer is not a reader").isEqualTo(Status.Code.PERMISSION_DENIED);

    assertThat(code(() -> status(channelUnchecked(null, null), "a"))).isEqualTo(Status.Code.UNAUTHENTICATED);
    assertThat(code(() -> status(channelUnchecked("not-a-known-token", null), "a")))
        .isEqualTo(Status.Code.UNAUTHENTICATED);
    assertThat(new RankConnection(channel(null, null)).send(hello("c", 0, 1)).end().getCode())
        .as("a stranger cannot create a job, so cannot fix its shape").isEqualTo(Status.Code.UNAUTHENTICATED);
    ManagedChannel health = channel(null, null);
    assertThat(HealthGrpc.newBlockingStub(health).check(HealthCheckRequest.getDefaultInstance()).getStatus().name())
        .as("health stays open for load balancers").isEqualTo("SERVING");
  }

  @Test
  void anotherJobsReportIsAnsweredExactlyAsOneThatDoesNotExist() throws Exception {
    start(null, accessFile(""));
    daemon.store().save(dev.frdiag.report.ReportJson.read("""
        {"schema": "frdiag.report/v1", "report_id": "b-000001", "job": "b", "verdict": "HANG",
         "symptom": "CPU_STALL", "headline": "rank 1 never issued all_reduce #3 on pg 0", "culprit_ranks": [1],
         "confidence": 0.9, "created_at": "2026-01-02T03:04:05Z", "trigger": "stall", "recommendation": "r"}
        """));
    ManagedChannel readerOfA = channel(READER_A, null);
    StatusRuntimeException notYours = getReport(readerOfA, "b-000001");
    StatusRuntimeException notThere = getReport(readerOfA, "b-000002");
    assertThat(notYours.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND)
        .isEqualTo(notThere.getStatus().getCode());
    assertThat(notYours.getStatus().getDescription()).isEqualTo("no report 'b-000001'");
    assertThat(notThere.getStatus().getDescription()).isEqualTo("no report 'b-000002'");
  }

  private static StatusRuntimeException getReport(ManagedChannel c, String id) {
    return org.junit.jupiter.api.Assertions.assertThrows(StatusRuntimeException.class, () ->
        DiagnosisGrpc.newBlockingStub(c).withDeadlineAfter(5, TimeUnit.SECONDS)
            .getReport(dev.frdiag.proto.v1.GetReportRequest.newBuilder().setReportId(id).build()));
  }

  @Test
  void theAccessFileIsReadAgainWhenItChangesAndTokensNeverReachTheLog() throws Exception {
    ListAppender<ILoggingEvent> logged = new ListAppender<>();
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    logged.start();
    root.addAppender(logged);
    try {
      Path access = accessFile("");
      start(null, access);
      String newcomer = "token-added-while-running";
      assertThat(code(() -> status(channelUnchecked(newcomer, null), "a"))).isEqualTo(Status.Code.UNAUTHENTICATED);

      accessFile(",\n{\"name\": \"newcomer\", \"token_sha256\": \"" + AccessRules.sha256(newcomer)
          + "\", \"reader\": [\"*\"]}");
      Files.setLastModifiedTime(access, FileTime.from(Instant.now().plusSeconds(5)));
      new RankConnection(channel(WRITER_A, null)).send(hello("a", 0, 1)).next();
      assertThat(status(channel(newcomer, null), "a").getRanksConnected()).isEqualTo(1);

      // The daemon's threads keep logging while this reads: read a copy, taken under the appender's own lock.
      List<ILoggingEvent> seen;
      synchronized (logged) {
        seen = new java.util.ArrayList<>(logged.list);
      }
      for (String token : List.of(WRITER_A, READER_A, OPERATOR_A, WRITER_B, newcomer, "not-a-known-token")) {
        // Everything of frdiag's, at any level, and everything at the levels the daemon's log configuration lets
        // out (its Netty and gRPC loggers, whose frame dumps show headers at DEBUG, are pinned to WARN there).
        assertThat(seen).filteredOn(e -> e.getLoggerName().startsWith("dev.frdiag")
                || e.getLevel().isGreaterOrEqual(ch.qos.logback.classic.Level.INFO))
            .noneSatisfy(e -> assertThat(e.getFormattedMessage()).contains(token));
      }
      assertThat(seen).anySatisfy(e -> assertThat(e.getFormattedMessage()).contains("access file")
          .contains("reloaded"));
    } finally {
      root.detachAppender(logged);
    }
  }

  @Test
  void plaintextBeyondLoopbackIsRefusedUnlessAskedFor() {
    Daemon exposed = new Daemon(DaemonSettings.builder().bindAddress("0.0.0.0").port(0).dataDir(dataDir).build());
    try {
      assertThatThrownBy(exposed::start).isInstanceOf(IllegalStateException.class)
          .hasMessage("refusing to serve 0.0.0.0 in plaintext: give --tls-cert and --tls-key (and --access-file), "
              + "or --insecure to serve without TLS on purpose");
    } finally {
      exposed.close();
    }
  }

  @Test
  void aRenewedCertificateIsServedWithoutARestart() throws Exception {
    TestCertificates other = TestCertificates.authority(certs, "renewed");
    Path[] renewed = other.server("renewed-daemon");
    Path cert = dataDir.resolve("server.pem");
    Path key = dataDir.resolve("server.key");
    Files.copy(server[0], cert);
    Files.copy(server[1], key);
    ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
    ServerTls tls = new ServerTls(cert, key, null, scheduler, Duration.ofMillis(200));
    Server s = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0), tls.credentials())
        .addService(new HealthStatusManager().getHealthService()).build().start();
    try {
      ManagedChannel old = NettyChannelBuilder.forAddress("127.0.0.1", s.getPort(), ClientSecurity.of(
          ca.caCertificate(), null, null, null).credentials()).build();
      channels.add(old);
      HealthGrpc.newBlockingStub(old).check(HealthCheckRequest.getDefaultInstance());

      // As a certificate manager renews: both files in place, then both stamped newer.
      Files.copy(renewed[1], key, StandardCopyOption.REPLACE_EXISTING);
      Files.copy(renewed[0], cert, StandardCopyOption.REPLACE_EXISTING);
      FileTime later = FileTime.from(Instant.now().plusSeconds(5));
      Files.setLastModifiedTime(key, later);
      Files.setLastModifiedTime(cert, later);
      await().atMost(Duration.ofSeconds(10)).ignoreExceptions().untilAsserted(() -> {
        ManagedChannel fresh = NettyChannelBuilder.forAddress("127.0.0.1", s.getPort(), ClientSecurity.of(
            other.caCertificate(), null, null, null).credentials()).build();
        channels.add(fresh);
        HealthGrpc.newBlockingStub(fresh).withDeadlineAfter(2, TimeUnit.SECONDS)
            .check(HealthCheckRequest.getDefaultInstance());
      });
    } finally {
      s.shutdownNow();
      tls.close();
      scheduler.shutdownNow();
    }
  }
}
