package dev.frdiag.daemon.ports;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.access.Security;
import dev.frdiag.daemon.access.ServerTls;
import dev.frdiag.daemon.settings.Connections;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.testing.metrics.PrometheusScrape;
import dev.frdiag.testing.tls.TestCertificates;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every port of a daemon on 127.0.0.1 keeps serving while a thousand slowloris connections hold it: each sends the
 * start of a request and never the rest. Normal requests must be served at all, within a deadline far above what
 * they take (the times are logged: a few milliseconds each on an idle machine; the JDK server these ports used
 * before served none in 60 s); slow and idle connections are cut at their timeouts, and one address's connections
 * beyond its share are turned away.
 */
class SlowClientsTest {
  private static final int SLOW = 1_000;
  /** Slow connections per source address: within the per-client bound, so that only the timeouts can help. */
  private static final int PER_ADDRESS = 25;
  /** A deadline for being served at all, generous for a loaded machine; the times taken are logged. */
  private static final Duration SERVED_WITHIN = Duration.ofSeconds(5);
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(SlowClientsTest.class);

  @TempDir
  Path dataDir;

  private Daemon daemon;

  @AfterEach
  void stop() {
    if (daemon != null) {
      daemon.close();
    }
  }

  private Daemon start(Security security) {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).webPort(0).metricsPort(0)
        .dataDir(dataDir).security(security).build()).start();
    return daemon;
  }

  /** Twelve requests, one after the other, each answered within {@link #SERVED_WITHIN}; returns how many were. */
  private static int served(HttpClient client, URI uri) {
    List<Long> millis = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      long start = System.nanoTime();
      try {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(uri).timeout(SERVED_WITHIN).build(),
            HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200) {
          millis.add((System.nanoTime() - start) / 1_000_000);
        }
      } catch (java.io.IOException e) {
        // Not served within the deadline.
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    logTimes(uri.toString(), millis);
    return millis.size();
  }

  private static void logTimes(String what, List<Long> millis) {
    List<Long> sorted = millis.stream().sorted().toList();
    log.info("{}: {} of 12 served; median {} ms, slowest {} ms; in order {}", what, sorted.size(),
        sorted.isEmpty() ? "-" : sorted.get(sorted.size() / 2), sorted.isEmpty() ? "-" : sorted.get(sorted.size() - 1),
        millis);
  }

  /** One request before the slow clients come, given all the time it needs: the port serves, its code is loaded. */
  private static void warmUp(HttpClient client, URI uri) throws Exception {
    assertThat(client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60)).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
  }

  private static HttpClient plain() {
    return HttpClient.newBuilder().connectTimeout(SERVED_WITHIN).build();
  }

  @Test
  void theWebViewServesWhileAThousandSlowClientsHoldIt() throws Exception {
    start(Security.none());
    URI jobs = URI.create("http://127.0.0.1:" + daemon.webPort() + "/");
    warmUp(plain(), jobs);
    try (SlowClients slow = new SlowClients(daemon.webPort(), SLOW, PER_ADDRESS, SlowClients.HALF_HTTP_REQUEST)) {
      assertThat(served(plain(), jobs)).as("requests served among %d slow connections", SLOW)
          .isEqualTo(12);
      assertThat(slow.stillOpen()).as("slow connections held open meanwhile").isEqualTo(SLOW);
    }
  }

  @Test
  void theWebViewOverTlsServesWhileAThousandSlowClientsHoldIt(@TempDir Path certs) throws Exception {
    TestCertificates ca = TestCertificates.authority(certs, "frdiag");
    Path[] server = ca.server("daemon");
    start(new Security(server[0], server[1], null, null, false));
    ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
    try (ServerTls trust = new ServerTls(server[0], server[1], ca.caCertificate(), scheduler)) {
      SSLContext context = trust.sslContext();
      URI jobs = URI.create("https://127.0.0.1:" + daemon.webPort() + "/");
      warmUp(tls(context), jobs);
      try (SlowClients slow = new SlowClients(daemon.webPort(), SLOW, PER_ADDRESS, SlowClients.HALF_TLS_RECORD)) {
        assertThat(served(tls(context), jobs)).as("requests served among %d slow connections", SLOW)
            .isEqualTo(12);
        assertThat(slow.stillOpen()).as("slow connections held open meanwhile").isEqualTo(SLOW);
      }
    } finally {
      scheduler.shutdownNow();
    }
  }

  private static HttpClient tls(SSLContext context) {
    return HttpClient.newBuilder().sslContext(context).connectTimeout(SERVED_WITHIN).build();
  }

  @Test
  void metricsAreServedWhileAThousandSlowClientsHoldThePort() throws Exception {
    start(Security.none());
    URI metrics = URI.create("http://127.0.0.1:" + daemon.metricsPort() + "/metrics");
    warmUp(plain(), metrics);
    try (SlowClients slow = new SlowClients(daemon.metricsPort(), SLOW, PER_ADDRESS,
        SlowClients.HALF_HTTP_REQUEST)) {
      assertThat(served(plain(), metrics)).as("scrapes served among %d slow connections", SLOW)
          .isEqualTo(12);
      assertThat(slow.stillOpen()).as("slow connections held open meanwhile").isEqualTo(SLOW);
    }
  }

  /** A health check on a new connection (what a slow client would keep a new caller from), within {@code deadline}. */
  private boolean health(Duration deadline) throws InterruptedException {
    ManagedChannel c = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext().build();
    try {
      return HealthGrpc.newBlockingStub(c).withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS)
          .check(HealthCheckRequest.getDefaultInstance()).getStatus() == HealthCheckResponse.ServingStatus.SERVING;
    } finally {
      c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void grpcServesWhileAThousandSlowClientsHoldThePort() throws Exception {
    start(Security.none());
    health(Duration.ofSeconds(30));
    try (SlowClients slow = new SlowClients(daemon.port(), SLOW, PER_ADDRESS, SlowClients.HALF_HTTP2_PREFACE)) {
      List<Long> millis = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        long start = System.nanoTime();
        try {
          if (health(SERVED_WITHIN)) {
            millis.add((System.nanoTime() - start) / 1_000_000);
          }
        } catch (io.grpc.StatusRuntimeException e) {
          // Not served within the deadline.
        }
      }
      logTimes("gRPC health on a new connection", millis);
      int served = millis.size();
      assertThat(served).as("health checks served among %d slow connections", SLOW).isEqualTo(12);
      assertThat(slow.stillOpen()).as("slow connections held open meanwhile").isEqualTo(SLOW);
    }
  }

  /** A daemon on 127.0.0.1 whose ports cut slow and idle connections after {@code timeout}. */
  private Daemon startWithTimeouts(Duration timeout) {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).webPort(0).metricsPort(0)
        .dataDir(dataDir).connections(Connections.builder().headerTimeout(timeout).idleTimeout(timeout).build())
        .build()).start();
    return daemon;
  }

  @Test
  void aClientThatTricklesItsRequestIsCutOffAtTheHeaderTimeoutOnEveryPort() throws Exception {
    startWithTimeouts(Duration.ofSeconds(1));
    for (int port : new int[] {daemon.webPort(), daemon.metricsPort()}) {
      try (SlowClients trickler = new SlowClients(port, 1, 1, SlowClients.HALF_HTTP_REQUEST)) {
        // A header line every 200 ms, as a slowloris keeps a server waiting: never the blank line that ends it.
        await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(200)).until(() -> {
          trickler.send("X-Slow: yes\r\n");
          return trickler.stillOpen() == 0;
        });
      }
    }
    try (SlowClients halfPreface = new SlowClients(daemon.port(), 1, 1, SlowClients.HALF_HTTP2_PREFACE)) {
      await().atMost(Duration.ofSeconds(15)).until(() -> halfPreface.stillOpen() == 0);
    }
  }

  @Test
  void aConnectionIdlePastTheIdleTimeoutIsClosed() throws Exception {
    startWithTimeouts(Duration.ofSeconds(1));
    try (SlowClients idle = new SlowClients(daemon.webPort(), 1, 1, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        .getBytes(java.nio.charset.StandardCharsets.US_ASCII))) {
      // Answered, kept alive, then asked nothing more.
      await().atMost(Duration.ofSeconds(15)).until(() -> idle.stillOpen() == 0);
      assertThat(idle.received()).startsWith("HTTP/1.1 200 OK");
    }
  }

  @Test
  void aClientOverItsShareOfConnectionsIsTurnedAwayAndOthersAreStillServed() throws Exception {
    start(Security.none());
    int share = Connections.DEFAULT_MAX_PER_CLIENT;
    URI jobs = URI.create("http://127.0.0.1:" + daemon.webPort() + "/");
    warmUp(plain(), jobs);
    try (SlowClients web = new SlowClients(daemon.webPort(), share + 36, share + 36, SlowClients.HALF_HTTP_REQUEST);
        SlowClients grpc = new SlowClients(daemon.port(), share + 36, share + 36, SlowClients.HALF_HTTP2_PREFACE)) {
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        assertThat(web.stillOpen()).as("web connections of one address left open").isEqualTo(share);
        assertThat(grpc.stillOpen()).as("gRPC connections of one address left open").isEqualTo(share);
      });
      assertThat(served(plain(), jobs)).as("another address is served").isEqualTo(12);
      assertThat(health(SERVED_WITHIN)).isTrue();
      assertThat(PrometheusScrape.samples(daemon.metricsPort()))
          .containsEntry("frdiag_connections_refused_total{port=\"web\",reason=\"per_client\"}", 36.0)
          .containsEntry("frdiag_connections_refused_total{port=\"grpc\",reason=\"per_client\"}", 36.0);
    }
  }
}
