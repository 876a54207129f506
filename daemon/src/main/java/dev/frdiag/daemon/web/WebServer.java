package dev.frdiag.daemon.web;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsExchange;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import dev.frdiag.analysis.Ranks;
import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.access.Principal;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.proto.BearerToken;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportHtml;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.UntrustedText;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLPeerUnverifiedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon's web view on its own HTTP(S) port: the jobs ({@code /}), a job's reports ({@code /jobs/J}) and one
 * report's page ({@code /reports/ID}, its JSON at {@code /reports/ID.json}), behind the same access rules as the
 * gRPC services: a caller reads only the jobs it is a reader of, by bearer token or client certificate.
 *
 * <p>Served by the JDK's HTTP server, like the metrics port: pages are small, few people look at once, and TLS comes
 * from the same SSLContext as the daemon's other ports.
 */
public final class WebServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WebServer.class);
  /** Pages run only their own inline script and style, and load nothing from anywhere. */
  static final String CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; "
      + "script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  private final HttpServer server;
  private final ExecutorService executor;
  private final ReportStore store;
  private final JobRegistry registry;
  private final AccessRules rules;
  private final Consumer<String> denied;

  /**
   * Serves on {@code bind}:{@code port} (0 picks a free port), over TLS when {@code tls} is given (client
   * certificates required when {@code requireClientCertificate}).
   *
   * @param rules who may read which job; null lets every caller read every job (no access file)
   * @param denied told the reason of every refusal (for metrics)
   * @throws UncheckedIOException when the port cannot be bound
   */
  public WebServer(ReportStore store, JobRegistry registry, AccessRules rules, Consumer<String> denied, String bind,
      int port, SSLContext tls, boolean requireClientCertificate) {
    this.store = store;
    this.registry = registry;
    this.rules = rules;
    this.denied = denied;
    try {
      InetSocketAddress address = new InetSocketAddress(InetAddress.getByName(bind), port);
      if (tls == null) {
        server = HttpServer.create(address, 64);
      } else {
        HttpsServer https = HttpsServer.create(address, 64);
        https.setHttpsConfigurator(new HttpsConfigurator(tls) {
          @Override
          public void configure(HttpsParameters params) {
            // The server only asks for a client certificate through SSLParameters; the older setter is ignored.
            SSLParameters p = getSSLContext().getDefaultSSLParameters();
            p.setNeedClientAuth(requireClientCertificate);
            params.setSSLParameters(p);
          }
        });
        server = https;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot serve the web view on " + bind + ":" + port + ": " + e.getMessage(), e);
    }
    executor = Executors.newFixedThreadPool(2, r -> {
      Thread t = new Thread(r, "frdiag-web");
      t.setDaemon(true);
      return t;
    });
    server.setExecutor(executor);
    server.createContext("/", this::handle);
    server.start();
  }

  /** The bound port (the real one when started with port 0). */
  public int port() {
    return server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }

  /** A page or document to send. */
  private record Response(int status, String contentType, String body) {
    static Response page(int status, String html) {
      return new Response(status, "text/html; charset=utf-8", html);
    }
  }

  private void handle(HttpExchange ex) throws IOException {
    Response r;
    try {
      r = respond(ex);
    } catch (RuntimeException e) {
      log.warn("web view: {} {} failed", ex.getRequestMethod(), ex.getRequestURI().getRawPath(), e);
      r = error(500, "Internal error", "The page could not be made; the daemon's log says why.");
    }
    byte[] body = r.body().getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", r.contentType());
    ex.getResponseHeaders().set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    ex.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
    ex.getResponseHeaders().set("Cache-Control", "no-store");
    if (r.status() == 401) {
      ex.getResponseHeaders().set("WWW-Authenticate", "Bearer");
    }
    boolean head = ex.getRequestMethod().equals("HEAD");
    ex.sendResponseHeaders(r.status(), head ? -1 : body.length);
    if (!head) {
      try (OutputStream out = ex.getResponseBody()) {
        out.write(body);
      }
    }
    ex.close();
  }

  private Response respond(HttpExchange ex) {
    String method = ex.getRequestMethod();
    if (!method.equals("GET") && !method.equals("HEAD")) {
      return error(405, "Method not allowed", "The web view only reads.");
    }
    Optional<Principal> who = principal(ex);
    if (who.isEmpty()) {
      return error(401, "Who are you?", "This daemon needs a token (Authorization: Bearer …) or a client "
          + "certificate it knows.");
    }
    String path = ex.getRequestURI().getRawPath();
    if (path.equals("/")) {
      return Response.page(200, jobs(who.get()));
    }
    if (path.startsWith("/jobs/")) {
      String job = decode(path.substring("/jobs/".length()));
      if (!who.get().mayRead(job)) {
        return forbidden(job);
      }
      return Response.page(200, reports(job));
    }
    if (path.startsWith("/reports/")) {
      String id = decode(path.substring("/reports/".length()));
      boolean json = id.endsWith(".json");
      Optional<Report> report = store.get(json ? id.substring(0, id.length() - 5) : id);
      if (report.isEmpty()) {
        return error(404, "No such report", "There is no report " + id + ".");
      }
      if (!who.get().mayRead(report.get().job())) {
        // Said as for a job the caller may not read, whether or not the report exists there.
        return forbidden(report.get().job());
      }
      return json ? new Response(200, "application/json; charset=utf-8", ReportJson.write(report.get()))
          : Response.page(200, ReportHtml.page(report.get(), List.of(new ReportHtml.Link("all jobs", "/"),
              new ReportHtml.Link("reports of " + report.get().job(), "/jobs/" + encode(report.get().job())),
              new ReportHtml.Link("JSON", "/reports/" + encode(report.get().reportId()) + ".json"))));
    }
    return error(404, "Not found", "Nothing is served at " + path + ".");
  }

  private Response forbidden(String job) {
    denied.accept("not_reader");
    return error(403, "Not yours to read", "Your token or certificate is not a reader of job " + job + ".");
  }

  private static Response error(int status, String title, String text) {
    return Response.page(status, ReportHtml.document(title, List.of(new ReportHtml.Link("all jobs", "/")),
        "<section><h1>" + h(title) + "</h1><p>" + h(text) + "</p></section>"));
  }

  private Optional<Principal> principal(HttpExchange ex) {
    if (rules == null) {
      return Optional.of(Principal.OPEN);
    }
    String header = ex.getRequestHeaders().getFirst("Authorization");
    if (header != null) {
      String token = BearerToken.parseHeader(header);
      Principal p = token == null ? null : rules.byToken(token);
      if (p == null) {
        denied.accept("unknown_token");
      }
      return Optional.ofNullable(p);
    }
    if (ex instanceof HttpsExchange https) {
      try {
        Certificate[] chain = https.getSSLSession().getPeerCertificates();
        if (chain.length > 0 && chain[0] instanceof X509Certificate x) {
          Principal p = rules.byCertificate(x.getSubjectX500Principal().getName());
          if (p == null) {
            denied.accept("unknown_certificate");
          }
          return Optional.ofNullable(p);
        }
      } catch (SSLPeerUnverifiedException e) {
        // No client certificate: fall through to "no credentials".
      }
    }
    denied.accept("no_credentials");
    return Optional.empty();
  }

  /** Every job the caller may read: those the daemon tracks now and those with stored reports. */
  private String jobs(Principal who) {
    Map<String, JobSummary> live = new TreeMap<>();
    for (Job j : registry.all()) {
      live.put(j.id(), j.summary());
    }
    List<String> names = new ArrayList<>(live.keySet());
    store.jobs().stream().filter(j -> !live.containsKey(j)).forEach(names::add);
    StringBuilder b = new StringBuilder("<section><h1>Jobs</h1><table class=\"list\" id=\"jobs\"><tr><th>job</th>"
        + "<th>ranks</th><th>connected</th><th>lost</th><th>incident</th><th>newest report</th></tr>");
    names.stream().sorted().filter(who::mayRead).forEach(name -> {
      JobSummary s = live.get(name);
      Optional<Report> latest = store.latest(name);
      b.append("<tr><td><a href=\"/jobs/").append(encode(name)).append("\">").append(h(name)).append("</a></td><td>")
          .append(s == null ? "" : s.getWorldSize()).append("</td><td>").append(s == null ? "" : s.getRanksConnected())
          .append("</td><td>").append(s == null ? "" : s.getRanksLost()).append("</td><td>")
          .append(s != null && s.getIncidentOpen() ? "open" : "").append("</td><td>");
      latest.ifPresent(r -> b.append(link(r)).append(' ').append(h(r.verdict() + " " + r.symptom())));
      b.append("</td></tr>");
    });
    return ReportHtml.document("frdiag jobs", List.of(), b.append("</table></section>").toString());
  }

  private String reports(String job) {
    StringBuilder b = new StringBuilder("<section><h1>Reports of ").append(h(job))
        .append("</h1><table class=\"list\" id=\"reports\"><tr><th>report</th><th>created</th><th>trigger</th>"
            + "<th>verdict</th><th>culprits</th><th>headline</th></tr>");
    for (Report r : store.list(job)) {
      b.append("<tr><td>").append(link(r)).append("</td><td>")
          .append(h(r.createdAt().truncatedTo(ChronoUnit.SECONDS).toString())).append("</td><td>")
          .append(h(r.trigger().wire())).append("</td><td>").append(h(r.verdict() + " " + r.symptom()))
          .append("</td><td>").append(h(Ranks.compact(r.culpritRanks()))).append("</td><td>")
          .append(h(r.headline())).append("</td></tr>");
    }
    return ReportHtml.document("reports of " + job, List.of(new ReportHtml.Link("all jobs", "/")),
        b.append("</table></section>").toString());
  }

  private static String link(Report r) {
    return "<a href=\"/reports/" + encode(r.reportId()) + "\">" + h(r.reportId()) + "</a>";
  }

  private static String encode(String segment) {
    return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private static String decode(String segment) {
    try {
      return URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return segment;
    }
  }

  private static String h(String text) {
    return UntrustedText.html(text);
  }
}
