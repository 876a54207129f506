package dev.frdiag.daemon.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.access.Security;
import dev.frdiag.daemon.settings.DaemonSettings;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code /metrics} asks for the same credentials as the daemon's other ports, unless opened on purpose. */
class MetricsAccessTest {
  @TempDir
  Path dataDir;

  private Daemon daemon;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @AfterEach
  void stop() {
    if (daemon != null) {
      daemon.close();
    }
  }

  private void start(boolean openMetrics) throws Exception {
    Path access = Files.writeString(dataDir.resolve("access.json"), """
        {"principals": [{"name": "prometheus", "token_sha256": "%s", "reader": []}]}"""
        .formatted(AccessRules.sha256("scraper-token")));
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).metricsPort(0).dataDir(dataDir)
        .security(new Security(null, null, null, access, false, false, openMetrics)).build()).start();
  }

  private HttpResponse<String> scrape(String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + daemon.metricsPort() + "/metrics"))
        .timeout(Duration.ofSeconds(10));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void withAnAccessFileOnlyACallerItKnowsMayScrape() throws Exception {
    start(false);
    HttpResponse<String> stranger = scrape(null);
    assertThat(stranger.statusCode()).isEqualTo(401);
    assertThat(stranger.headers().firstValue("WWW-Authenticate")).hasValue("Bearer");
    assertThat(stranger.body()).doesNotContain("frdiag_");
    assertThat(scrape("not-a-known-token").statusCode()).isEqualTo(401);

    HttpResponse<String> scraper = scrape("scraper-token");
    assertThat(scraper.statusCode()).isEqualTo(200);
    assertThat(scraper.body()).contains("frdiag_access_denied_total{reason=\"no_credentials\"} 1.0")
        .contains("frdiag_access_denied_total{reason=\"unknown_token\"} 1.0");
  }

  @Test
  void openMetricsLetAnyoneScrapeThoughAnAccessFileIsGiven() throws Exception {
    start(true);
    HttpResponse<String> anyone = scrape(null);
    assertThat(anyone.statusCode()).isEqualTo(200);
    assertThat(anyone.body()).contains("frdiag_jobs 0.0");
  }
}
