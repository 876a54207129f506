package dev.frdiag.proto;

import io.grpc.CallCredentials;
import io.grpc.Metadata;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * How a client proves who it is to the daemon: a token sent on every call as {@code authorization: Bearer <token>}.
 * The daemon keeps only its SHA-256. {@link #toString()} never shows the token.
 */
public final class BearerToken extends CallCredentials {
  /** The header it travels in. */
  public static final Metadata.Key<String> HEADER = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  /** Where clients look for a token when no file is given. */
  public static final String ENVIRONMENT = "FRDIAG_TOKEN";

  private final String token;

  private BearerToken(String token) {
    if (token.isEmpty() || !token.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
      throw new IllegalArgumentException("a token is one or more printable ASCII characters without spaces");
    }
    this.token = token;
  }

  /** The token as given. */
  public static BearerToken of(String token) {
    return new BearerToken(Objects.requireNonNull(token, "token").strip());
  }

  /**
   * The token in {@code file} (surrounding whitespace ignored).
   *
   * @throws IOException naming the file when it cannot be read
   * @throws IllegalArgumentException naming the file when it holds no token
   */
  public static BearerToken fromFile(Path file) throws IOException {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IOException("cannot read the token file " + file + ": " + e.getMessage(), e);
    }
    try {
      return of(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("token file " + file + ": " + e.getMessage(), e);
    }
  }

  /** The token the header value carries, or null when it is not a bearer token. */
  public static String parseHeader(String value) {
    if (value == null || !value.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return null;
    }
    String t = value.substring(7).strip();
    return t.isEmpty() ? null : t;
  }

  @Override
  public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier applier) {
    try {
      Metadata headers = new Metadata();
      headers.put(HEADER, "Bearer " + token);
      applier.apply(headers);
    } catch (RuntimeException e) {
      applier.fail(Status.UNAUTHENTICATED.withDescription("cannot attach the token").withCause(e));
    }
  }

  @Override
  public String toString() {
    return "BearerToken[hidden]";
  }
}
