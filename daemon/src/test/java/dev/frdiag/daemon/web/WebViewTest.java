package dev.frdiag.daemon.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.access.Security;
import dev.frdiag.daemon.access.ServerTls;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.testing.tls.TestCertificates;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The daemon's web view on 127.0.0.1: pages of jobs and reports, behind the same access rules as gRPC. */
class WebViewTest {
  private static final String READER_A = "token-reader-of-job-a";
  private static final String READER_B = "token-reader-of-job-b";

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

  private Path accessFile() throws IOException {
    Path f = dataDir.resolve("access.json");
    Files.writeString(f, """
        {"principals": [
          {"name": "viewer-a", "token_sha256": "%s", "reader": ["a"]},
          {"name": "viewer-b", "token_sha256": "%s", "reader": ["b"]}
        ]}""".formatted(AccessRules.sha256(READER_A), AccessRules.sha256(READER_B)));
    return f;
  }

  /** A stored report of {@code job} whose op name carries markup, as a rank could send it. */
  private Report stored(String job) {
    Report r = ReportJson.read("""
        {"schema": "frdiag.report/v1", "report_id": "%s", "job": "%s", "verdict": "HANG",
         "symptom": "CPU_STALL", "headline": "Rank 1 never issued <img src=x onerror=alert(1)> (0#3)",
         "culprit_ranks": [1], "confidence": 0.9, "created_at": "2026-01-02T03:04:05Z", "trigger": "stall",
         "collective": {"process_group": "0", "process_group_desc": "", "seq": 3, "is_p2p": false,
           "op": "all_reduce", "comms_id": ""},
         "group_progress": [{"collective": {"process_group": "0", "process_group_desc": "", "seq": 3,
           "is_p2p": false, "op": "all_reduce", "comms_id": ""}, "root_cause": true, "first_seq": 1,
           "starts_recorded": true, "rows": [
             {"host": "node0", "ranks": [0], "cells": "CCSNN", "lost": false, "culprit": false},
             {"host": "node0", "ranks": [1], "cells": "CCNNN", "lost": false, "culprit": true}]}],
         "recommendation": "look at what rank 1 was doing"}
        """.formatted(daemon.store().nextReportId(job), job));
    daemon.store().save(r);
    return r;
  }

  private HttpResponse<String> get(String path, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + daemon.webPort() + path))
        .timeout(Duration.ofSeconds(10));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private void start(Path access) {
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).webPort(0).dataDir(dataDir)
        .security(new Security(null, null, null, access, false)).build()).start();
  }

  @Test
  void aReportWhoseFileWasDamagedSinceStartIsA500PageAndTheListsStillServe() throws Exception {
    start(accessFile());
    Report a1 = stored("a");
    Report a2 = stored("a");
    Files.writeString(daemon.store().pathOf(a1), "{\"schema\": \"frdiag.report/v1\", \"report_id\"");

    HttpResponse<String> page = get("/reports/" + a1.reportId(), READER_A);
    assertThat(page.statusCode()).isEqualTo(500);
    assertThat(page.body()).contains("Report a-000001 is stored, but its file can no longer be read; the daemon&#39;s "
        + "log says why.").doesNotContain(dataDir.toString());
    assertThat(get("/reports/" + a1.reportId() + ".json", READER_A).statusCode()).isEqualTo(500);
    assertThat(get("/jobs/a", READER_A).body()).contains(a1.reportId(), a2.reportId());
    assertThat(get("/", READER_A).body()).contains(a2.reportId());
    assertThat(ReportJson.read(get("/reports/" + a2.reportId() + ".json", READER_A).body())).isEqualTo(a2);
    // Another job's damaged report is no more visible than its healthy one.
    Report b = stored("b");
    Files.delete(daemon.store().pathOf(b));
    assertThat(get("/reports/" + b.reportId(), READER_A).statusCode()).isEqualTo(404);
  }

  @Test
  void aReaderSeesItsJobsReportsAndPagesAndNothingOfAnotherJob() throws Exception {
    start(accessFile());
    Report a = stored("a");
    Report b = stored("b");

    HttpResponse<String> jobs = get("/", READER_A);
    assertThat(jobs.statusCode()).isEqualTo(200);
    assertThat(jobs.body()).contains("href=\"/jobs/a\"").doesNotContain("/jobs/b");

    HttpResponse<String> page = get("/reports/" + a.reportId(), READER_A);
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.headers().firstValue("Content-Security-Policy")).hasValue(WebServer.CONTENT_SECURITY_POLICY);
    assertThat(page.body()).contains("data-culprit=\"true\"").contains("&lt;img src=x onerror=alert(1)&gt;")
        .doesNotContain("<img");
    assertThat(ReportJson.read(get("/reports/" + a.reportId() + ".json", READER_A).body())).isEqualTo(a);
    assertThat(get("/jobs/a", READER_A).body()).contains(a.reportId());

    assertThat(get("/reports/" + b.reportId(), READER_A).statusCode()).isEqualTo(404);
    assertThat(get("/reports/" + b.reportId() + ".json", READER_A).statusCode()).isEqualTo(404);
    assertThat(get("/jobs/b", READER_A).statusCode()).isEqualTo(404);
    assertThat(get("/reports/" + b.reportId(), READER_B).statusCode()).isEqualTo(200);
  }

  @Test
  void anotherJobsReportIsAnsweredExactlyAsOneThatDoesNotExist() throws Exception {
    start(accessFile());
    Report b = stored("b");
    String missing = "b-" + "9".repeat(b.reportId().length() - 2);
    for (String suffix : List.of("", ".json")) {
      HttpResponse<String> notYours = get("/reports/" + b.reportId() + suffix, READER_A);
      HttpResponse<String> notThere = get("/reports/" + missing + suffix, READER_A);
      assertThat(notYours.statusCode()).isEqualTo(404).isEqualTo(notThere.statusCode());
      assertThat(notYours.body()).isEqualTo(notThere.body()).doesNotContain(b.reportId());
      assertThat(notYours.headers().map()).isEqualTo(notThere.headers().map());
    }
    HttpResponse<String> jobNotYours = get("/jobs/b", READER_A);
    HttpResponse<String> jobNotThere = get("/jobs/c", READER_A);
    assertThat(jobNotYours.statusCode()).isEqualTo(404).isEqualTo(jobNotThere.statusCode());
    assertThat(jobNotYours.body()).isEqualTo(jobNotThere.body());
  }

  @Test
  void noTokenOrAnUnknownOneIsUnauthenticatedAndTheViewOnlyReads() throws Exception {
    start(accessFile());
    Report a = stored("a");
    HttpResponse<String> none = get("/reports/" + a.reportId(), null);
    assertThat(none.statusCode()).isEqualTo(401);
    assertThat(none.headers().firstValue("WWW-Authenticate")).hasValue("Bearer");
    assertThat(none.body()).doesNotContain(a.headline().substring(0, 20));
    assertThat(get("/", "not-a-token").statusCode()).isEqualTo(401);
    HttpResponse<String> post = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + daemon.webPort()
        + "/reports/" + a.reportId())).header("Authorization", "Bearer " + READER_A)
        .POST(HttpRequest.BodyPublishers.ofString("x")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(post.statusCode()).isEqualTo(405);
    assertThat(get("/reports/a-999999", READER_A).statusCode()).isEqualTo(404);
    assertThat(get("/nothing", READER_A).statusCode()).isEqualTo(404);
  }

  @Test
  void withoutAnAccessFileEveryCallerReadsEveryJob() throws Exception {
    start(null);
    Report a = stored("a");
    assertThat(get("/", null).body()).contains("href=\"/jobs/a\"");
    assertThat(get("/reports/" + a.reportId(), null).statusCode()).isEqualTo(200);
  }

  @Test
  void overMutualTlsTheClientCertificateIsTheIdentityAndPlaintextIsRefused(@TempDir Path certs) throws Exception {
    TestCertificates ca = TestCertificates.authority(certs, "frdiag");
    Path[] server = ca.server("daemon");
    Path[] viewer = ca.client("viewer", "viewer-a");
    Path[] stranger = ca.client("stranger", "someone-else");
    Path access = dataDir.resolve("access.json");
    Files.writeString(access, """
        {"principals": [{"name": "viewer", "certificate": "CN=viewer-a", "reader": ["a"]},
                        {"name": "stranger", "certificate": "CN=someone-else", "reader": ["b"]}]}""");
    daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).webPort(0).dataDir(dataDir)
        .security(new Security(server[0], server[1], ca.caCertificate(), access, false)).build()).start();
    Report a = stored("a");
    ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
    try (ServerTls viewerTls = new ServerTls(viewer[0], viewer[1], ca.caCertificate(), scheduler);
        ServerTls strangerTls = new ServerTls(stranger[0], stranger[1], ca.caCertificate(), scheduler)) {
      URI page = URI.create("https://127.0.0.1:" + daemon.webPort() + "/reports/" + a.reportId());
      assertThat(https(viewerTls.sslContext(), page).statusCode()).isEqualTo(200);
      assertThat(https(strangerTls.sslContext(), page).statusCode()).isEqualTo(404);
      HttpResponse<String> plaintext = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
          + daemon.webPort() + "/")).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(plaintext.statusCode()).as("a plaintext client is told, and served nothing").isEqualTo(400);
      assertThat(plaintext.body()).isEqualTo("This port speaks TLS: use https://\n");
    } finally {
      scheduler.shutdownNow();
    }
  }

  private static HttpResponse<String> https(SSLContext context, URI uri) throws Exception {
    HttpClient client = HttpClient.newBuilder().sslContext(context).connectTimeout(Duration.ofSeconds(5)).build();
    return client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
