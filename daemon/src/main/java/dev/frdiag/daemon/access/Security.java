package dev.frdiag.daemon.access;

import java.nio.file.Path;

/**
 * How the daemon protects itself: TLS files (all null for plaintext), the access file (null: everyone may do
 * everything), and what was asked for on purpose beyond loopback: plaintext ({@code insecure}), no access file
 * ({@code openAccess}), and metrics anyone may scrape though an access file is given ({@code openMetrics}).
 */
public record Security(Path tlsCert, Path tlsKey, Path tlsClientCa, Path accessFile, boolean insecure,
    boolean openAccess, boolean openMetrics) {
  public Security {
    if ((tlsCert == null) != (tlsKey == null)) {
      throw new IllegalArgumentException("--tls-cert and --tls-key go together");
    }
    if (tlsClientCa != null && tlsCert == null) {
      throw new IllegalArgumentException("--tls-client-ca needs --tls-cert and --tls-key");
    }
    if (openAccess && accessFile != null) {
      throw new IllegalArgumentException("--open-access and --access-file contradict each other: give one");
    }
    if (openMetrics && accessFile == null) {
      throw new IllegalArgumentException("--open-metrics only means something with --access-file");
    }
  }

  /** TLS files and access file, and nothing asked for beyond them. */
  public Security(Path tlsCert, Path tlsKey, Path tlsClientCa, Path accessFile, boolean insecure) {
    this(tlsCert, tlsKey, tlsClientCa, accessFile, insecure, false, false);
  }

  /** Plaintext, no access rules: for a daemon on loopback, tests and the demo. */
  public static Security none() {
    return new Security(null, null, null, null, false);
  }

  public boolean tls() {
    return tlsCert != null;
  }
}
