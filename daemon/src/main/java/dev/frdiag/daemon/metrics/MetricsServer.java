package dev.frdiag.daemon.metrics;

import com.sun.net.httpserver.HttpsConfigurator;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import javax.net.ssl.SSLContext;

/** The Prometheus text endpoint ({@code /metrics}) on its own HTTP(S) port. */
public final class MetricsServer implements AutoCloseable {
  private final HTTPServer server;

  /**
   * Serves {@code metrics} on {@code bind}:{@code port} (0 picks a free port), over TLS when {@code tls} is given.
   *
   * @throws UncheckedIOException when the port cannot be bound
   */
  public MetricsServer(DaemonMetrics metrics, String bind, int port, SSLContext tls) {
    try {
      HTTPServer.Builder b = HTTPServer.builder().inetAddress(InetAddress.getByName(bind)).port(port)
          .registry(metrics.registry());
      if (tls != null) {
        b.httpsConfigurator(new HttpsConfigurator(tls));
      }
      server = b.buildAndStart();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot serve metrics on " + bind + ":" + port + ": " + e.getMessage(), e);
    }
  }

  public int port() {
    return server.getPort();
  }

  @Override
  public void close() {
    server.close();
  }
}
