package dev.frdiag.daemon.alert;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Reports reach webhooks, Alertmanager and Slack on 127.0.0.1, in their formats, retried, never blocking. */
class AlertDispatcherTest {
  private HttpServer server;
  private final BlockingQueue<String[]> received = new LinkedBlockingQueue<>();
  private final AtomicInteger failuresLeft = new AtomicInteger();
  private final CountDownLatch release = new CountDownLatch(1);
  private final List<String> failed = new CopyOnWriteArrayList<>();

  private URI serve() throws Exception {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", exchange -> {
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      if (exchange.getRequestURI().getPath().equals("/stuck")) {
        try {
          release.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      boolean fail = failuresLeft.getAndDecrement() > 0;
      received.add(new String[] {exchange.getRequestURI().getPath(), body, fail ? "500" : "200"});
      exchange.sendResponseHeaders(fail ? 500 : 200, -1);
      exchange.close();
    });
    server.start();
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  @AfterEach
  void stop() {
    release.countDown();
    if (server != null) {
      server.stop(0);
    }
  }

  private static Report report(String job, String symptom) {
    return ReportJson.read("""
        {"schema": "frdiag.report/v1", "report_id": "%s-000001", "job": "%s", "verdict": "HANG",
         "symptom": "%s", "headline": "rank 5 never started all_gather", "culprit_ranks": [5],
         "culprit_hosts": ["node07"], "confidence": 0.85, "created_at": "2026-01-02T03:04:05Z",
         "trigger": "stall", "recommendation": "drain node07"}
        """.formatted(job, job, symptom));
  }

  private String[] next() throws InterruptedException {
    String[] r = received.poll(10, TimeUnit.SECONDS);
    assertThat(r).as("a delivery within 10 s").isNotNull();
    return r;
  }

  @Test
  void eachFormatGetsItsBody() throws Exception {
    URI base = serve();
    try (AlertDispatcher d = new AlertDispatcher(List.of(
        AlertTarget.parse("webhook=" + base + "/hook"), AlertTarget.parse("alertmanager=" + base + "/api/v2/alerts"),
        AlertTarget.parse("slack=" + base + "/slack")), Duration.ofMillis(10), failed::add)) {
      d.accept(report("llama", "GPU_STALL"));
      ObjectMapper json = new ObjectMapper();
      for (int i = 0; i < 3; i++) {
        String[] r = next();
        JsonNode body = json.readTree(r[1]);
        switch (r[0]) {
          case "/hook" -> assertThat(ReportJson.read(r[1]).reportId()).isEqualTo("llama-000001");
          case "/api/v2/alerts" -> {
            JsonNode labels = body.get(0).get("labels");
            assertThat(labels.get("alertname").asText()).isEqualTo("FrdiagHang");
            assertThat(labels.get("job_id").asText()).isEqualTo("llama");
            assertThat(labels.get("symptom").asText()).isEqualTo("GPU_STALL");
            assertThat(body.get(0).get("annotations").get("exclude").asText()).isEqualTo("node07");
          }
          case "/slack" -> assertThat(body.get("text").asText()).contains("HANG · GPU_STALL", "llama-000001",
              "rank 5 never started all_gather", "srun --exclude=node07");
          default -> throw new AssertionError(r[0]);
        }
      }
    }
    assertThat(failed).isEmpty();
  }

  /**
   * A hang that ended by itself resolves the alert it raised: Alertmanager gets the same labels with endsAt, Slack a
   * message marked resolved, neither a host to exclude.
   */
  @Test
  void aHangThatEndedByItselfResolvesItsAlert() throws Exception {
    URI base = serve();
    Report hang = report("llama", "GPU_STALL");
    Instant at = hang.createdAt().plusSeconds(31);
    try (AlertDispatcher d = new AlertDispatcher(List.of(AlertTarget.parse("alertmanager=" + base + "/api/v2/alerts"),
        AlertTarget.parse("slack=" + base + "/slack")), Duration.ofMillis(10), failed::add)) {
      d.accept(hang);
      d.accept(hang.recovered(at));
      ObjectMapper json = new ObjectMapper();
      java.util.Map<String, List<JsonNode>> byPath = new java.util.HashMap<>();
      for (int i = 0; i < 4; i++) {
        String[] r = next();
        byPath.computeIfAbsent(r[0], k -> new java.util.ArrayList<>()).add(json.readTree(r[1]));
      }
      List<JsonNode> alerts = byPath.get("/api/v2/alerts");
      assertThat(alerts).hasSize(2);
      assertThat(alerts.get(1).get(0).get("labels")).as("the labels the firing alert had")
          .isEqualTo(alerts.get(0).get(0).get("labels"));
      assertThat(alerts.get(0).get(0).has("endsAt")).isFalse();
      assertThat(alerts.get(1).get(0).get("endsAt").asText()).isEqualTo(at.toString());
      assertThat(alerts.get(1).get(0).get("annotations").has("exclude")).isFalse();
      List<JsonNode> slack = byPath.get("/slack");
      assertThat(slack.get(1).get("text").asText()).startsWith("*resolved* ").contains("Recovered by itself")
          .doesNotContain("srun --exclude");
    }
    assertThat(failed).isEmpty();
  }

  @Test
  void aFailedDeliveryIsRetriedAndOneThatNeverWorksIsCounted() throws Exception {
    URI base = serve();
    failuresLeft.set(2);
    try (AlertDispatcher d = new AlertDispatcher(List.of(AlertTarget.parse("webhook=" + base + "/hook")),
        Duration.ofMillis(10), failed::add)) {
      d.accept(report("j", "GPU_STALL"));
      assertThat(next()[2]).isEqualTo("500");
      assertThat(next()[2]).isEqualTo("500");
      assertThat(next()[2]).as("the third attempt").isEqualTo("200");
      failuresLeft.set(AlertDispatcher.ATTEMPTS);
      d.accept(report("k", "GPU_STALL"));
      for (int i = 0; i < AlertDispatcher.ATTEMPTS; i++) {
        assertThat(next()[2]).isEqualTo("500");
      }
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> failed.size() == 1);
      assertThat(failed).containsExactly("webhook");
    }
  }

  @Test
  void aTargetThatNeverAnswersDoesNotHoldUpTheCaller() throws Exception {
    URI base = serve();
    try (AlertDispatcher d = new AlertDispatcher(List.of(AlertTarget.parse("webhook=" + base + "/stuck")),
        Duration.ofMillis(10), failed::add)) {
      // The first delivery hangs in the server; every further accept() must still return at once.
      for (int i = 0; i < AlertDispatcher.QUEUE + 10; i++) {
        d.accept(report("j" + i, "GPU_STALL"));
      }
      assertThat(d.dropped()).as("the queue is bounded: the oldest waiting reports give way").isPositive();
    }
  }

  @Test
  void targetsGetOnlyTheJobsTheyAskFor() throws Exception {
    URI base = serve();
    try (AlertDispatcher d = new AlertDispatcher(List.of(AlertTarget.parse("webhook=" + base + "/llama,jobs=llama-*"),
        AlertTarget.parse("webhook=" + base + "/all")), Duration.ofMillis(10), failed::add)) {
      d.accept(report("gpt-1", "GPU_STALL"));
      d.accept(report("llama-7", "GPU_STALL"));
      List<String> paths = new java.util.ArrayList<>();
      for (int i = 0; i < 3; i++) {
        String[] r = next();
        paths.add(r[0] + " " + ReportJson.read(r[1]).job());
      }
      assertThat(paths).containsExactlyInAnyOrder("/all gpt-1", "/all llama-7", "/llama llama-7");
    }
  }

  @Test
  void aBadTargetIsANamedError() {
    assertThatThrownBy(() -> AlertTarget.parse("pager=http://x")).hasMessageContaining("webhook, alertmanager, slack");
    assertThatThrownBy(() -> AlertTarget.parse("slack=ftp://x")).hasMessageContaining("is not http(s)");
    assertThat(AlertTarget.parse("slack=https://hooks.slack.com/services/T/B/SECRET").toString())
        .as("no secret in logs").isEqualTo("slack@hooks.slack.com");
  }
}
