package dev.frdiag.command;

import dev.frdiag.proto.BearerToken;
import io.grpc.ChannelCredentials;
import io.grpc.CompositeChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The options every frdiag client shares to reach a daemon that asks for TLS, a client certificate or a token:
 * {@code --tls-ca}, {@code --tls-cert}/{@code --tls-key}, {@code --token-file} (or {@code FRDIAG_TOKEN}).
 */
public final class ClientSecurity {
  @Option(names = "--tls-ca", paramLabel = "PEM", scope = ScopeType.INHERIT, description = "Trust the daemon's certificate from this CA "
      + "(PEM); turns TLS on.")
  Path ca;

  @Option(names = "--tls-cert", paramLabel = "PEM", scope = ScopeType.INHERIT, description = "Client certificate (PEM) for mutual TLS.")
  Path cert;

  @Option(names = "--tls-key", paramLabel = "PEM", scope = ScopeType.INHERIT, description = "Private key (PKCS#8 PEM) of --tls-cert.")
  Path key;

  @Option(names = "--token-file", paramLabel = "FILE", scope = ScopeType.INHERIT, description = "A bearer token for the daemon's access "
      + "rules (default: the FRDIAG_TOKEN environment variable, if set).")
  Path tokenFile;

  /** TLS and token as given; all absent means plaintext with no token. */
  public static ClientSecurity of(Path ca, Path cert, Path key, Path tokenFile) {
    ClientSecurity s = new ClientSecurity();
    s.ca = ca;
    s.cert = cert;
    s.key = key;
    s.tokenFile = tokenFile;
    return s;
  }

  /** True when the daemon is reached over TLS. */
  public boolean tls() {
    return ca != null || cert != null;
  }

  /**
   * The credentials for a channel to the daemon: TLS (with a client certificate when given) or plaintext, with
   * the token on every call when there is one.
   *
   * @throws IllegalArgumentException when the options do not go together or a file cannot be used, naming it
   */
  public ChannelCredentials credentials() {
    if ((cert == null) != (key == null)) {
      throw new IllegalArgumentException("--tls-cert and --tls-key go together");
    }
    ChannelCredentials transport;
    if (tls()) {
      TlsChannelCredentials.Builder b = TlsChannelCredentials.newBuilder();
      try {
        if (ca != null) {
          b.trustManager(ca.toFile());
        }
        if (cert != null) {
          b.keyManager(cert.toFile(), key.toFile());
        }
      } catch (IOException e) {
        throw new IllegalArgumentException("cannot use " + (ca != null ? ca : cert) + " for TLS: " + e.getMessage(),
            e);
      }
      transport = b.build();
    } else {
      transport = InsecureChannelCredentials.create();
    }
    BearerToken token = token();
    return token == null ? transport : CompositeChannelCredentials.create(transport, token);
  }

  /** The token from --token-file, else from FRDIAG_TOKEN, else none. */
  public BearerToken token() {
    try {
      if (tokenFile != null) {
        return BearerToken.fromFile(tokenFile);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e.getMessage(), e);
    }
    String env = System.getenv(BearerToken.ENVIRONMENT);
    return env == null || env.isBlank() ? null : BearerToken.of(env);
  }
}
