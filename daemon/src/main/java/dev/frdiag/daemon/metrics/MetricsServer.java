package dev.frdiag.daemon.metrics;

import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.ports.ConnectionGate;
import dev.frdiag.daemon.ports.HttpPort;
import dev.frdiag.daemon.settings.Connections;
import io.prometheus.metrics.exporter.common.PrometheusHttpExchange;
import io.prometheus.metrics.exporter.common.PrometheusHttpRequest;
import io.prometheus.metrics.exporter.common.PrometheusHttpResponse;
import io.prometheus.metrics.exporter.common.PrometheusScrapeHandler;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import javax.net.ssl.SSLContext;

/**
 * The Prometheus text endpoint ({@code /metrics}) on its own HTTP(S) port, served by an {@link HttpPort}. With an
 * access file it answers only callers the file knows, by bearer token or client certificate, like the other ports.
 */
public final class MetricsServer implements AutoCloseable {
  /** A scrape is quick; one thread serves every scraper. */
  static final int THREADS = 1;

  private final HttpPort port;
  private final PrometheusScrapeHandler scrapes;
  private final AccessRules rules;
  private final Consumer<String> denied;

  /**
   * Serves {@code metrics} on {@code bind}:{@code port} (0 picks a free port), over TLS when {@code tls} is given.
   *
   * @param rules the access file, whose callers alone may scrape; null lets anyone scrape
   * @param denied told the reason of every refused scrape
   * @param refusedConnection told the reason of every connection turned away ({@link ConnectionGate})
   * @throws UncheckedIOException when the port cannot be bound
   */
  public MetricsServer(DaemonMetrics metrics, String bind, int port, SSLContext tls, boolean requireClientCertificate,
      AccessRules rules, Consumer<String> denied, Connections connections, Consumer<String> refusedConnection) {
    this.scrapes = new PrometheusScrapeHandler(metrics.registry());
    this.rules = rules;
    this.denied = denied;
    this.port = new HttpPort("metrics", bind, port, tls, requireClientCertificate, connections, THREADS,
        this::answer, refusedConnection);
  }

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

  private HttpPort.Response answer(HttpPort.Request request) throws IOException {
    if (!request.method().equals("GET") && !request.method().equals("HEAD")) {
      return HttpPort.Response.text(405, "text/plain; charset=utf-8", "The metrics port only reads.\n");
    }
    if (rules != null && rules.caller(request.header("Authorization"), request.clientCertificateSubject(), denied)
        .isEmpty()) {
      return HttpPort.Response.text(401, "text/plain; charset=utf-8", "This daemon needs a token (Authorization: "
          + "Bearer …) or a client certificate it knows.\n").with("WWW-Authenticate", "Bearer");
    }
    if (!request.rawPath().equals("/metrics")) {
      return HttpPort.Response.text(404, "text/plain; charset=utf-8", "Metrics are at /metrics.\n");
    }
    Scrape scrape = new Scrape(request);
    scrapes.handleRequest(scrape);
    return scrape.response();
  }

  /** One scrape as the Prometheus library's handler sees it: the request, and the response it writes. */
  private static final class Scrape implements PrometheusHttpExchange, PrometheusHttpRequest, PrometheusHttpResponse {
    private final HttpPort.Request request;
    private final Map<String, String> headers = new HashMap<>();
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private int status = 500;

    Scrape(HttpPort.Request request) {
      this.request = request;
    }

    HttpPort.Response response() {
      String type = headers.getOrDefault("Content-Type", "text/plain; charset=utf-8");
      Map<String, String> rest = new HashMap<>(headers);
      rest.remove("Content-Type");
      rest.remove("Content-Length");
      return new HttpPort.Response(status, type, body.toByteArray(), rest);
    }

    @Override
    public PrometheusHttpRequest getRequest() {
      return this;
    }

    @Override
    public PrometheusHttpResponse getResponse() {
      return this;
    }

    @Override
    public void handleException(IOException e) throws IOException {
      throw e;
    }

    @Override
    public void handleException(RuntimeException e) {
      throw e;
    }

    @Override
    public void close() {
      // Nothing held: the response is sent once the handler returns.
    }

    @Override
    public String getQueryString() {
      return request.rawQuery();
    }

    @Override
    public Enumeration<String> getHeaders(String name) {
      return Collections.enumeration(request.headers().all(name));
    }

    @Override
    public String getMethod() {
      return request.method();
    }

    @Override
    public String getRequestPath() {
      return request.rawPath();
    }

    @Override
    public void setHeader(String name, String value) {
      headers.put(name, value);
    }

    @Override
    public OutputStream sendHeadersAndGetBody(int statusCode, int contentLength) {
      status = statusCode;
      return body;
    }
  }
}
