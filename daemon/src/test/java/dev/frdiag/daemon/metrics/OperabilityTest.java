package dev.frdiag.daemon.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.testing.metrics.PrometheusScrape;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.reflection.v1.ServerReflectionGrpc;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.reflection.v1.ServiceResponse;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What operators' tools ask a running daemon on loopback: gRPC health (as a load balancer or grpcurl does), server
 * reflection (grpcurl's {@code list}), and the Prometheus endpoint, scraped over HTTP and parsed.
 */
class OperabilityTest {
  @TempDir
  Path dataDir;

  private Daemon daemon;
  private ManagedChannel channel;

  @BeforeEach
  void start() {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).metricsPort(0).dataDir(dataDir)
        .build()).start();
    channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
  }

  @AfterEach
  void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    daemon.close();
  }

  @Test
  void healthSaysServingOnceStarted() {
    HealthCheckResponse r = HealthGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
        .check(HealthCheckRequest.getDefaultInstance());
    assertThat(r.getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
  }

  @Test
  void reflectionListsTheServices() throws Exception {
    CompletableFuture<List<String>> services = new CompletableFuture<>();
    StreamObserver<ServerReflectionRequest> requests = ServerReflectionGrpc.newStub(channel)
        .withDeadlineAfter(5, TimeUnit.SECONDS).serverReflectionInfo(new StreamObserver<>() {
          @Override
          public void onNext(ServerReflectionResponse r) {
            services.complete(r.getListServicesResponse().getServiceList().stream().map(ServiceResponse::getName)
                .toList());
          }

          @Override
          public void onError(Throwable t) {
            services.completeExceptionally(t);
          }

          @Override
          public void onCompleted() {
          }
        });
    requests.onNext(ServerReflectionRequest.newBuilder().setListServices("*").build());
    requests.onCompleted();
    assertThat(services.get(5, TimeUnit.SECONDS)).contains("frdiag.v1.Collector", "frdiag.v1.Diagnosis",
        "grpc.health.v1.Health");
  }

  @Test
  void prometheusEndpointCountsIncidentsReportsRejectionsAndTheTimeToAReport() throws Exception {
    // One rank that answers dump requests; one invalid stream; one diagnosis.
    StreamObserver<RankMessage>[] rank = new StreamObserver[1];
    rank[0] = CollectorGrpc.newStub(channel).connect(new StreamObserver<>() {
      @Override
      public void onNext(DaemonMessage m) {
        if (m.hasDumpRequest()) {
          synchronized (rank) {
            rank[0].onNext(RankMessage.newBuilder().setDumpReply(DumpReply.newBuilder()
                .setRequestId(m.getDumpRequest().getRequestId())).build());
          }
        }
      }

      @Override
      public void onError(Throwable t) {
      }

      @Override
      public void onCompleted() {
      }
    });
    synchronized (rank) {
      rank[0].onNext(RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
          .setJobId("job").setWorldSize(1).setHostname("node0").setPid(1))
          .addProcessGroups(ProcessGroup.newBuilder().setName("0").addRanks(0).setGlobalRankStride(1))).build());
      // A heartbeat that took two seconds to arrive, as one does from a rank whose daemon is behind.
      rank[0].onNext(RankMessage.newBuilder().setHeartbeat(Heartbeat.newBuilder()
          .setSentAtNs((System.currentTimeMillis() - 2_000) * 1_000_000L)).build());
    }
    CompletableFuture<Void> refused = new CompletableFuture<>();
    CollectorGrpc.newStub(channel).connect(new StreamObserver<DaemonMessage>() {
      @Override
      public void onNext(DaemonMessage m) {
      }

      @Override
      public void onError(Throwable t) {
        refused.complete(null);
      }

      @Override
      public void onCompleted() {
        refused.complete(null);
      }
    }).onNext(RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
        .setJobId("bad").setWorldSize(0))).build());
    refused.get(5, TimeUnit.SECONDS);
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).ignoreExceptions().until(() ->
        DiagnosisGrpc.newBlockingStub(channel).diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId("job").build())
            .getSummary().getVerdict() != null);

    Map<String, Double> m = scrape();
    assertThat(m).containsEntry("frdiag_incidents_total{trigger=\"on_demand\"}", 1.0)
        .containsEntry("frdiag_messages_rejected_total{reason=\"invalid_argument\"}", 1.0)
        .containsEntry("frdiag_detection_to_report_seconds_count", 1.0)
        .containsEntry("frdiag_heartbeat_delay_seconds_count", 1.0)
        .containsEntry("frdiag_heartbeat_delay_seconds_bucket{le=\"1.0\"}", 0.0)
        .containsEntry("frdiag_heartbeat_delay_seconds_bucket{le=\"5.0\"}", 1.0)
        .containsEntry("frdiag_jobs", 1.0)
        .containsEntry("frdiag_ranks{state=\"connected\"}", 1.0)
        .containsEntry("frdiag_store_healthy", 1.0)
        .containsEntry("frdiag_store_write_errors_total", 0.0);
    assertThat(m.keySet()).anySatisfy(k -> assertThat(k).startsWith("frdiag_reports_total{symptom=")
        .contains("verdict=\"INSUFFICIENT_EVIDENCE\""));
    assertThat(m.keySet()).anySatisfy(k -> assertThat(k).startsWith("jvm_memory_used_bytes"));
    assertThat(m).as("the transport's pool, measured").containsKey("frdiag_intake_lag_seconds");
    // The refused stream is closed; the rank's own is still open.
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).untilAsserted(() ->
        assertThat(scrape()).containsEntry("frdiag_streams{kind=\"rank\"}", 1.0));
  }

  /** Every sample of the text exposition format, by name and labels as written. */
  private Map<String, Double> scrape() throws Exception {
    return PrometheusScrape.samples(daemon.metricsPort());
  }
}
