package dev.frdiag.daemon;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.access.Security;
import dev.frdiag.daemon.alert.AlertTarget;
import dev.frdiag.daemon.fleet.FleetReports;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.proto.BearerToken;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.ListPartsRequest;
import dev.frdiag.proto.v1.ListPartsResponse;
import dev.frdiag.proto.v1.PartIncident;
import dev.frdiag.proto.v1.PartKind;
import dev.frdiag.proto.v1.PartStanding;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.testing.incidents.IncidentWatch;
import dev.frdiag.testing.metrics.PrometheusScrape;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.NettyChannelBuilder;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fleet memory through the real daemon: simulated jobs hang on chosen hosts, and the ranking, the alert, the page
 * and the metrics name the parts that keep failing across jobs, not the part one job reported again and again;
 * a restarted daemon ranks the same; a reader of one job sees that job's incidents only.
 */
class FleetEndToEndTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir
  Path dir;

  @Test
  void hangsOfThreeJobsOnOneGpuRankItFirstAlertItAndSurviveARestart() throws Exception {
    List<String> webhook = new CopyOnWriteArrayList<>();
    HttpServer sink = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 8);
    sink.createContext("/", ex -> {
      webhook.add(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
      ex.sendResponseHeaders(200, -1);
      ex.close();
    });
    sink.start();
    DaemonSettings settings = DaemonSettings.builder().bindAddress("127.0.0.1").port(0).metricsPort(0).webPort(0)
        .dataDir(dir.resolve("data")).stallTimeout(Duration.ofSeconds(1))
        // The one job diagnosed again and again is asked at once.
        .limits(Limits.builder().diagnoseInterval(Duration.ofMillis(10)).build())
        .alerts(List.of(AlertTarget.parse("webhook=http://127.0.0.1:" + sink.getAddress().getPort() + "/")))
        .build();
    try {
      ListPartsResponse before;
      try (Daemon daemon = new Daemon(settings).start()) {
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
        try {
          // Rank 9 is node01's GPU 1: the same GPU stalls in three jobs.
          for (String job : List.of("train-a", "train-b", "train-c")) {
            hang(channel, job, Fault.gpuStall(9, 3), 0);
          }
          // One job that hangs on node00's GPU 2 and is diagnosed three times: one bad job, not a bad node.
          hang(channel, "solo", Fault.gpuStall(2, 3), 2);
          // A fabric fault: node00's mlx5_0 port 1 goes down.
          hang(channel, "fab", Fault.fabric(3), 0);

          before = parts(channel, ListPartsRequest.getDefaultInstance());
          assertThat(before.getPartsList().subList(0, 2)).extracting(FleetEndToEndTest::display)
              .containsExactlyInAnyOrder("node01", "node01 cuda:1");
          PartStanding gpu = get(before, "node01 cuda:1");
          assertThat(gpu.getKind()).isEqualTo(PartKind.PART_GPU);
          assertThat(gpu.getJobs()).isEqualTo(3);
          assertThat(gpu.getIncidents()).isEqualTo(3);
          assertThat(gpu.getAlerting()).isTrue();
          assertThat(gpu.getSummary()).isEqualTo("culprit in 3 hangs of 3 jobs in 1 day, GPU_STALL \u00d73");
          assertThat(gpu.getDrain()).startsWith("scontrol update nodename=node01 state=drain reason=\"frdiag: "
              + "node01 cuda:1 culprit in 3 hangs of 3 jobs");
          assertThat(gpu.getRecentList()).extracting(PartIncident::getJobId)
              .containsExactlyInAnyOrder("train-a", "train-b", "train-c");
          PartStanding solo = get(before, "node00 cuda:2");
          assertThat(solo.getIncidents()).isEqualTo(3);
          assertThat(solo.getJobs()).isEqualTo(1);
          assertThat(solo.getScore()).isLessThanOrEqualTo(1.0);
          assertThat(solo.getAlerting()).isFalse();
          PartStanding port = get(before, "node00 mlx5_0/1");
          assertThat(port.getKind()).isEqualTo(PartKind.PART_PORT);
          assertThat(port.getAsCulprit()).isZero();
          assertThat(port.getSymptomsList()).extracting(s -> s.getSymptom()).containsExactly(Symptom.FABRIC);
          // node00 was blamed by two jobs (solo and fab): not enough for an alert.
          assertThat(get(before, "node00").getAlerting()).isFalse();
          assertThat(parts(channel, ListPartsRequest.newBuilder().setMinIncidents(2).build()).getPartsList())
              .extracting(FleetEndToEndTest::display).doesNotContain("node00 mlx5_0/1").contains("node00 cuda:2");

          // The alert: node01's GPU and node01 itself, with the drain line, once each.
          await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(partAlerts(webhook))
              .extracting(a -> a.get("summary").asText()).containsExactlyInAnyOrder(
                  "node01: culprit in 3 hangs of 3 jobs in 1 day, GPU_STALL \u00d73",
                  "node01 cuda:1: culprit in 3 hangs of 3 jobs in 1 day, GPU_STALL \u00d73"));
          assertThat(partAlerts(webhook)).allSatisfy(a -> {
            assertThat(a.get("drain").asText()).startsWith("scontrol update nodename=node01 state=drain");
            assertThat(a.get("reports")).hasSize(3);
          });

          // The page ranks them, links every report and shows the drain line.
          String page = get("http://127.0.0.1:" + daemon.webPort() + "/parts");
          assertThat(page).contains("node01 cuda:1", "node00 mlx5_0/1", "href=\"/reports/train-a-000001\"",
              "href=\"/reports/train-c-000001\"", "scontrol update nodename=node01 state=drain");
          assertThat(page.indexOf("node01 cuda:1")).isLessThan(page.indexOf("node00 cuda:2"));
          assertThat(get("http://127.0.0.1:" + daemon.webPort() + "/")).contains("href=\"/parts\"");

          var samples = PrometheusScrape.samples(daemon.metricsPort());
          assertThat(samples.get("frdiag_part_jobs{host=\"node01\",kind=\"gpu\",part=\"cuda:1\"}")).isEqualTo(3.0);
          assertThat(samples.get("frdiag_part_jobs{host=\"node00\",kind=\"gpu\",part=\"cuda:2\"}")).isEqualTo(1.0);
          assertThat(samples.get("frdiag_part_alerts_total")).isEqualTo(2.0);
        } finally {
          channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
      }

      // A new daemon on the same data dir reads the same ranking back from the stored reports.
      try (Daemon daemon = new Daemon(settings).start()) {
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
        try {
          ListPartsResponse after = parts(channel, ListPartsRequest.getDefaultInstance());
          assertThat(after.getPartsList()).extracting(FleetEndToEndTest::display, PartStanding::getJobs,
              PartStanding::getIncidents, PartStanding::getAlerting).containsExactlyElementsOf(
                  before.getPartsList().stream().map(p -> org.assertj.core.groups.Tuple.tuple(display(p),
                      p.getJobs(), p.getIncidents(), p.getAlerting())).toList());
        } finally {
          channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
      }
    } finally {
      sink.stop(0);
    }
  }

  @Test
  void aReaderOfOneJobSeesOnlyThatJobsIncidents() throws Exception {
    Path data = dir.resolve("data");
    ReportStore store = new ReportStore(data);
    Instant now = Instant.now();
    store.save(FleetReports.gpuStall("a-000001", "a", now, "node17", 1));
    store.save(FleetReports.gpuStall("b-000001", "b", now, "node17", 1));
    store.save(FleetReports.gpuStall("b-000002", "b", now, "node42", 3));
    Path access = dir.resolve("access.json");
    Files.writeString(access, """
        {"principals": [
          {"name": "viewer-a", "token_sha256": "%s", "reader": ["a"]},
          {"name": "oncall", "token_sha256": "%s", "reader": ["*"]}]}
        """.formatted(AccessRules.sha256("token-a"), AccessRules.sha256("token-all")));
    String name = InProcessServerBuilder.generateName();
    try (Daemon daemon = new Daemon(DaemonSettings.builder().dataDir(data)
        .security(new Security(null, null, null, access, false)).build(), InProcessServerBuilder.forName(name))
        .start()) {
      ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
      try {
        ListPartsResponse mine = DiagnosisGrpc.newBlockingStub(channel).withCallCredentials(BearerToken.of("token-a"))
            .withDeadlineAfter(10, TimeUnit.SECONDS).listParts(ListPartsRequest.getDefaultInstance());
        assertThat(mine.getPartsList()).extracting(FleetEndToEndTest::display)
            .containsExactlyInAnyOrder("node17", "node17 cuda:1");
        assertThat(mine.getPartsList()).allSatisfy(p -> {
          assertThat(p.getJobs()).isEqualTo(1);
          assertThat(p.getRecentList()).extracting(PartIncident::getJobId).containsOnly("a");
        });
        ListPartsResponse all = DiagnosisGrpc.newBlockingStub(channel).withCallCredentials(BearerToken.of(
            "token-all")).withDeadlineAfter(10, TimeUnit.SECONDS).listParts(ListPartsRequest.getDefaultInstance());
        assertThat(get(all, "node17 cuda:1").getJobs()).isEqualTo(2);
        assertThat(find(all, "node42")).isPresent();
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  /** Runs one simulated job into its hang, waits for its report, and asks for {@code extra} more diagnoses. */
  private static void hang(ManagedChannel channel, String job, Fault fault, int extra) throws Exception {
    BlockingQueue<ReportEnvelope> reports = IncidentWatch.of(channel, job);
    // Each simulated host plays its node agent too: its GPUs' NIC ports, and a port going down under a fabric fault.
    try (RankSimulator sim = RankSimulator.builder().topology(Topology.defaults()).fault(fault).jobId(job)
        .channel(channel).nodeAgents(true).stepInterval(Duration.ofMillis(10))
        .reporterSettings(ReporterSettings.builder().heartbeatInterval(Duration.ofMillis(200))
            .maxBatchDelay(Duration.ofMillis(50)).build()).build()) {
      assertThat(sim.awaitConnected(Duration.ofSeconds(20))).isTrue();
      sim.start();
      ReportEnvelope first = reports.poll(60, TimeUnit.SECONDS);
      assertThat(first).as("a report of %s within 60 s", job).isNotNull();
      for (int i = 0; i < extra; i++) {
        ReportEnvelope again = DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS)
            .diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId(job).build());
        assertThat(again.getSummary().getSymptom()).isEqualTo(first.getSummary().getSymptom());
      }
    }
  }

  private static ListPartsResponse parts(ManagedChannel channel, ListPartsRequest request) {
    return DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS).listParts(request);
  }

  private static Optional<PartStanding> find(ListPartsResponse r, String display) {
    return r.getPartsList().stream().filter(p -> display(p).equals(display)).findFirst();
  }

  private static PartStanding get(ListPartsResponse r, String display) {
    return find(r, display).orElseThrow(() -> new AssertionError(display + " is not among "
        + r.getPartsList().stream().map(FleetEndToEndTest::display).toList()));
  }

  private static String display(PartStanding p) {
    return p.getPart().isEmpty() ? p.getHost() : p.getHost() + " " + p.getPart();
  }

  private static List<JsonNode> partAlerts(List<String> bodies) throws Exception {
    List<JsonNode> alerts = new java.util.ArrayList<>();
    for (String b : bodies) {
      JsonNode n = JSON.readTree(b);
      if (n.path("schema").asText().equals("frdiag.part-alert/v1")) {
        alerts.add(n);
      }
    }
    return alerts;
  }

  private static String get(String url) throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(url).isEqualTo(200);
    return r.body();
  }
}
