package dev.frdiag.daemon.web;

import dev.frdiag.analysis.Ranks;
import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.access.Principal;
import dev.frdiag.daemon.ports.ConnectionGate;
import dev.frdiag.daemon.ports.HttpPort;
import dev.frdiag.daemon.fleet.Fleet;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.settings.Connections;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.daemon.store.ReportUnreadableException;
import dev.frdiag.daemon.store.StoredReport;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportHtml;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.UntrustedText;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Consumer;
import javax.net.ssl.SSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon's web view on its own HTTP(S) port: the jobs ({@code /}), a job's reports ({@code /jobs/J}), one
 * report's page ({@code /reports/ID}, its JSON at {@code /reports/ID.json}) and the parts that keep showing up in
 * hangs ({@code /parts}), behind the same access rules as the gRPC services: a caller reads only the jobs it is a reader of, by bearer token or client certificate. A job or
 * report the caller may not read is answered exactly as one that does not exist, so a stranger cannot tell which
 * exist.
 *
 * <p>Served by an {@link HttpPort}, which slow and idle clients cannot hold; TLS comes from the same SSLContext as
 * the daemon's other ports.
 */
public final class WebServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(WebServer.class);
  /** Pages run only their own inline script and style, and load nothing from anywhere. */
  static final String CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; "
      + "script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
  /** Pages are small and made in milliseconds: two threads serve many readers. */
  static final int THREADS = 2;

  private final HttpPort port;
  private final ReportStore store;
  private final JobRegistry registry;
  private final AccessRules rules;
  private final Consumer<String> denied;
  /** Null when the daemon keeps no fleet memory: {@code /parts} is then not served. */
  private final Fleet fleet;

  /**
   * Serves on {@code bind}:{@code port} (0 picks a free port), over TLS when {@code tls} is given (client
   * certificates required when {@code requireClientCertificate}).
   *
   * @param rules who may read which job; null lets every caller read every job (no access file)
   * @param denied told the reason of every refusal (for metrics)
   * @param refusedConnection told the reason of every connection turned away ({@link dev.frdiag.daemon.ports.ConnectionGate})
   * @throws UncheckedIOException when the port cannot be bound
   */
  public WebServer(ReportStore store, JobRegistry registry, AccessRules rules, Consumer<String> denied, String bind,
      int port, SSLContext tls, boolean requireClientCertificate, Connections connections,
      Consumer<String> refusedConnection) {
    this(store, registry, rules, denied, bind, port, tls, requireClientCertificate, connections, refusedConnection,
        null);
  }

  /** A web view that also serves the fleet page ({@code /parts}) from {@code fleet}. */
  public WebServer(ReportStore store, JobRegistry registry, AccessRules rules, Consumer<String> denied, String bind,
      int port, SSLContext tls, boolean requireClientCertificate, Connections connections,
      Consumer<String> refusedConnection, Fleet fleet) {
    this.fleet = fleet;
    this.store = store;
    this.registry = registry;
    this.rules = rules;
    this.denied = denied;
    this.port = new HttpPort("web", bind, port, tls, requireClientCertificate, connections, THREADS, this::answer,
        refusedConnection);
  }

  /** The bound port (the real one when started with port 0). */
  public int port() {
    return port.port();
  }

  /** The port's connections, as its bounds count them. */
  public ConnectionGate connections() {
    return port.gate();
  }

  @Override
  public void close() {
    port.close();
  }

  /** A page or document to send. */
  private record Response(int status, String contentType, String body) {
    static Response page(int status, String html) {
      return new Response(status, "text/html; charset=utf-8", html);
    }
  }

  private HttpPort.Response answer(HttpPort.Request request) {
    Response r = respond(request);
    HttpPort.Response out = HttpPort.Response.text(r.status(), r.contentType(), r.body())
        .with("Content-Security-Policy", CONTENT_SECURITY_POLICY).with("X-Content-Type-Options", "nosniff")
        .with("Cache-Control", "no-store");
    return r.status() == 401 ? out.with("WWW-Authenticate", "Bearer") : out;
  }

  private Response respond(HttpPort.Request request) {
    String method = request.method();
    if (!method.equals("GET") && !method.equals("HEAD")) {
      return error(405, "Method not allowed", "The web view only reads.");
    }
    Optional<Principal> who = principal(request);
    if (who.isEmpty()) {
      return error(401, "Who are you?", "This daemon needs a token (Authorization: Bearer …) or a client "
          + "certificate it knows.");
    }
    String path = request.rawPath();
    if (path.equals("/")) {
      return Response.page(200, jobs(who.get()));
    }
    if (path.equals("/parts") && fleet != null) {
      Principal caller = who.get();
      // Job ids never are "*", so only a reader of every job may read it.
      return Response.page(200, PartsPage.of(fleet.standings(caller::mayRead, caller.mayRead("*"), null, 1),
          fleet.settings()));
    }
    if (path.startsWith("/jobs/")) {
      String job = decode(path.substring("/jobs/".length()));
      if (!who.get().mayRead(job)) {
        denied.accept("not_reader");
        return noSuchJob();
      }
      return Response.page(200, reports(job));
    }
    if (path.startsWith("/reports/")) {
      String id = decode(path.substring("/reports/".length()));
      boolean json = id.endsWith(".json");
      Optional<StoredReport> found = store.find(json ? id.substring(0, id.length() - 5) : id);
      if (found.isPresent() && !who.get().mayRead(found.get().job())) {
        denied.accept("not_reader");
        found = Optional.empty();
      }
      if (found.isEmpty()) {
        // The same answer whether the report does not exist or is another job's: ids are not to be probed.
        return error(404, "No such report", "There is no report by that id that you may read.");
      }
      Report report;
      try {
        report = store.read(found.get());
      } catch (ReportUnreadableException e) {
        log.warn("{}", e.getMessage());
        return error(500, "Report unreadable", "Report " + found.get().reportId() + " is stored, but its file "
            + "can no longer be read; the daemon's log says why.");
      }
      return json ? new Response(200, "application/json; charset=utf-8", ReportJson.write(report))
          : Response.page(200, ReportHtml.page(report, List.of(new ReportHtml.Link("all jobs", "/"),
              new ReportHtml.Link("reports of " + report.job(), "/jobs/" + encode(report.job())),
              new ReportHtml.Link("JSON", "/reports/" + encode(report.reportId()) + ".json"))));
    }
    return error(404, "Not found", "Nothing is served at " + path + ".");
  }

  /** What a caller who may not read a job is told, whether or not the job exists. */
  private static Response noSuchJob() {
    return error(404, "No such job", "There is no job by that name that you may read.");
  }

  private static Response error(int status, String title, String text) {
    return Response.page(status, ReportHtml.document(title, List.of(new ReportHtml.Link("all jobs", "/")),
        "<section><h1>" + h(title) + "</h1><p>" + h(text) + "</p></section>"));
  }

  private Optional<Principal> principal(HttpPort.Request request) {
    return rules == null ? Optional.of(Principal.OPEN)
        : rules.caller(request.header("Authorization"), request.clientCertificateSubject(), denied);
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
      Optional<StoredReport> latest = store.latestSummary(name);
      b.append("<tr><td><a href=\"/jobs/").append(encode(name)).append("\">").append(h(name)).append("</a></td><td>")
          .append(s == null ? "" : s.getWorldSize()).append("</td><td>").append(s == null ? "" : s.getRanksConnected())
          .append("</td><td>").append(s == null ? "" : s.getRanksLost()).append("</td><td>")
          .append(s != null && s.getIncidentOpen() ? "open" : "").append("</td><td>");
      latest.ifPresent(r -> b.append(link(r.reportId())).append(' ').append(h(r.verdict() + " " + r.symptom())));
      b.append("</td></tr>");
    });
    return ReportHtml.document("frdiag jobs", fleet == null ? List.of()
        : List.of(new ReportHtml.Link("parts that keep showing up in hangs", "/parts")),
        b.append("</table></section>").toString());
  }

  private String reports(String job) {
    StringBuilder b = new StringBuilder("<section><h1>Reports of ").append(h(job))
        .append("</h1><table class=\"list\" id=\"reports\"><tr><th>report</th><th>created</th><th>trigger</th>"
            + "<th>verdict</th><th>culprits</th><th>headline</th></tr>");
    for (StoredReport r : store.list(job)) {
      b.append("<tr><td>").append(link(r.reportId())).append("</td><td>")
          .append(h(r.createdAt().truncatedTo(ChronoUnit.SECONDS).toString())).append("</td><td>")
          .append(h(r.trigger().wire())).append("</td><td>").append(h(r.verdict() + " " + r.symptom()))
          .append("</td><td>").append(h(Ranks.compact(r.culpritRanks()))).append("</td><td>")
          .append(h(r.headline())).append("</td></tr>");
    }
    return ReportHtml.document("reports of " + job, List.of(new ReportHtml.Link("all jobs", "/")),
        b.append("</table></section>").toString());
  }

  private static String link(String reportId) {
    return "<a href=\"/reports/" + encode(reportId) + "\">" + h(reportId) + "</a>";
  }

  static String encode(String segment) {
    return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private static String decode(String segment) {
    try {
      return URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return segment;
    }
  }

  static String h(String text) {
    return UntrustedText.html(text);
  }
}
