package dev.frdiag.daemon.access;

import java.nio.file.Path;

/**
 * How the daemon protects itself: TLS files (all null for plaintext), the access file (null: everyone may do
 * everything), and whether plaintext on a non-loopback address was asked for on purpose.
 */
public record Security(Path tlsCert, Path tlsKey, Path tlsClientCa, Path accessFile, boolean insecure) {
  public Security {
    if ((tlsCert == null) != (tlsKey == null)) {
      throw new IllegalArgumentException("--tls-cert and --tls-key go together");
    }
    if (tlsClientCa != null && tlsCert == null) {
      throw new IllegalArgumentException("--tls-client-ca needs --tls-cert and --tls-key");
    }
  }

  /** Plaintext, no access rules: for a daemon on loopback, tests and the demo. */
  public static Security none() {
    return new Security(null, null, null, null, false);
  }

  public boolean tls() {
    return tlsCert != null;
  }
}
