package dev.frdiag.daemon.access;

import io.grpc.ServerCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.util.AdvancedTlsX509KeyManager;
import io.grpc.util.AdvancedTlsX509TrustManager;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon's side of TLS from PEM files: its certificate and key, and, for mutual TLS, the CA its clients'
 * certificates must chain to. The files are read again every {@link #RELOAD_SECONDS} s, so a renewed certificate
 * is used without a restart; a failed read (a renewal caught halfway) keeps the identity in use and is retried.
 */
public final class ServerTls implements AutoCloseable {
  static final long RELOAD_SECONDS = 10;

  private static final Logger log = LoggerFactory.getLogger(ServerTls.class);

  private final AdvancedTlsX509KeyManager keys = new AdvancedTlsX509KeyManager();
  private final AdvancedTlsX509TrustManager clients;
  private final Path cert;
  private final Path key;
  private final Path clientCa;
  private final ScheduledFuture<?> reloads;
  private volatile List<FileTime> loaded;

  /**
   * @param clientCa null for TLS without client certificates
   * @throws IllegalArgumentException naming the file when one cannot be used
   */
  public ServerTls(Path cert, Path key, Path clientCa, ScheduledExecutorService scheduler) {
    this(cert, key, clientCa, scheduler, Duration.ofSeconds(RELOAD_SECONDS));
  }

  /** As above, reading the files again every {@code reload}. */
  public ServerTls(Path cert, Path key, Path clientCa, ScheduledExecutorService scheduler, Duration reload) {
    this.cert = Objects.requireNonNull(cert, "cert");
    this.key = Objects.requireNonNull(key, "key");
    this.clientCa = clientCa;
    try {
      clients = clientCa == null ? null : AdvancedTlsX509TrustManager.newBuilder()
          .setVerification(AdvancedTlsX509TrustManager.Verification.CERTIFICATE_ONLY_VERIFICATION).build();
      load();
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalArgumentException("cannot use " + cert + ", " + key
          + (clientCa == null ? "" : " and " + clientCa) + " for TLS: " + e.getMessage(), e);
    }
    reloads = scheduler.scheduleWithFixedDelay(this::reloadIfChanged, reload.toMillis(), reload.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  private void load() throws IOException, GeneralSecurityException {
    keys.updateIdentityCredentials(cert.toFile(), key.toFile());
    if (clients != null) {
      clients.updateTrustCredentials(clientCa.toFile());
    }
    loaded = stamps();
  }

  private List<FileTime> stamps() throws IOException {
    List<FileTime> t = new ArrayList<>();
    for (Path p : clientCa == null ? List.of(cert, key) : List.of(cert, key, clientCa)) {
      t.add(Files.getLastModifiedTime(p));
    }
    return t;
  }

  /**
   * Reads the files again when one changed. A renewal caught halfway (new key, old certificate) fails and is
   * tried again at the next look, and the identity in use stays until then: a failure never stops the reloads.
   */
  private void reloadIfChanged() {
    try {
      if (stamps().equals(loaded)) {
        return;
      }
      load();
      log.info("TLS files reloaded: {}", cert);
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      log.warn("TLS files could not be reloaded yet, the identity in use stays: {}", e.getMessage());
    }
  }

  /** For the gRPC port: TLS, and client certificates required when a client CA is set. */
  public ServerCredentials credentials() {
    TlsServerCredentials.Builder b = TlsServerCredentials.newBuilder().keyManager(keys);
    if (clients != null) {
      b.trustManager(clients).clientAuth(TlsServerCredentials.ClientAuth.REQUIRE);
    }
    return b.build();
  }

  /** For the daemon's HTTP ports (metrics, web), from the same files. */
  public SSLContext sslContext() {
    try {
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(new KeyManager[] {keys}, clients == null ? null : new TrustManager[] {clients}, null);
      return context;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot make a TLS context: " + e.getMessage(), e);
    }
  }

  @Override
  public void close() {
    reloads.cancel(false);
  }
}
