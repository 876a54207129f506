package dev.frdiag.daemon.access;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.frdiag.proto.BearerToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The access file: tokens (by their SHA-256) and certificate subjects, each with its roles. Read again when the
 * file changes; a file that no longer parses keeps the rules that were in force, and says why.
 *
 * <pre>{"principals": [
 *   {"name": "agents-job42", "token_sha256": "9f86d0…", "writer": ["job42"]},
 *   {"name": "oncall", "certificate": "CN=oncall,O=ml-infra", "reader": ["*"], "operator": ["*"]}]}</pre>
 */
public final class AccessRules {
  private static final Logger log = LoggerFactory.getLogger(AccessRules.class);
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  /** One entry of the file. */
  @JsonIgnoreProperties(ignoreUnknown = false)
  record Entry(@JsonProperty("name") String name, @JsonProperty("token_sha256") String tokenSha256,
      @JsonProperty("certificate") String certificate, @JsonProperty("writer") List<String> writer,
      @JsonProperty("reader") List<String> reader, @JsonProperty("operator") List<String> operator) {}

  /** The whole file. */
  record File(@JsonProperty("principals") List<Entry> principals) {}

  private record Rules(Map<String, Principal> byTokenHash, Map<String, Principal> byCertificate) {}

  private final Path file;
  private volatile Rules rules;
  private volatile FileTime loadedVersion;

  /**
   * Reads {@code file}.
   *
   * @throws IllegalArgumentException naming the file and the problem when it cannot be used
   */
  public AccessRules(Path file) {
    this.file = file;
    try {
      this.loadedVersion = Files.getLastModifiedTime(file);
      this.rules = parse(file);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read the access file " + file + ": " + e.getMessage(), e);
    }
  }

  /** The caller a token stands for, or null. */
  public Principal byToken(String token) {
    reloadIfChanged();
    return rules.byTokenHash().get(sha256(token));
  }

  /** The caller a certificate subject (RFC 2253, e.g. "CN=agent,O=ml") stands for, or null. */
  public Principal byCertificate(String subject) {
    reloadIfChanged();
    return rules.byCertificate().get(subject);
  }

  /**
   * The caller a request names by its {@code Authorization: Bearer} header, else by its client certificate's subject
   * (either may be null); empty, with the reason told to {@code denied}, when the file knows neither.
   */
  public Optional<Principal> caller(String authorization, String certificateSubject, Consumer<String> denied) {
    if (authorization != null) {
      String token = BearerToken.parseHeader(authorization);
      Principal p = token == null ? null : byToken(token);
      if (p == null) {
        denied.accept("unknown_token");
      }
      return Optional.ofNullable(p);
    }
    if (certificateSubject != null) {
      Principal p = byCertificate(certificateSubject);
      if (p == null) {
        denied.accept("unknown_certificate");
      }
      return Optional.ofNullable(p);
    }
    denied.accept("no_credentials");
    return Optional.empty();
  }

  /** Reads the file again when its modification time changed. */
  void reloadIfChanged() {
    try {
      FileTime now = Files.getLastModifiedTime(file);
      if (now.equals(loadedVersion)) {
        return;
      }
      synchronized (this) {
        if (now.equals(loadedVersion)) {
          return;
        }
        loadedVersion = now;
        rules = parse(file);
        log.info("access file {} reloaded: {} token(s), {} certificate(s)", file, rules.byTokenHash().size(),
            rules.byCertificate().size());
      }
    } catch (IOException | IllegalArgumentException e) {
      log.error("access file {} could not be reloaded, the rules in force stay: {}", file, e.getMessage());
    }
  }

  private static Rules parse(Path file) throws IOException {
    File parsed;
    try {
      parsed = JSON.readValue(Files.readString(file, StandardCharsets.UTF_8), File.class);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException("access file " + file + " is not valid: " + e.getOriginalMessage());
    }
    Map<String, Principal> tokens = new HashMap<>();
    Map<String, Principal> certs = new HashMap<>();
    List<Entry> entries = parsed == null || parsed.principals() == null ? List.of() : parsed.principals();
    for (int i = 0; i < entries.size(); i++) {
      Entry e = entries.get(i);
      String where = "access file " + file + ", principals[" + i + "]";
      if (e.name() == null || e.name().isBlank()) {
        throw new IllegalArgumentException(where + ": a name is needed");
      }
      if ((e.tokenSha256() == null) == (e.certificate() == null)) {
        throw new IllegalArgumentException(where + " (" + e.name() + "): give exactly one of token_sha256 and "
            + "certificate");
      }
      Principal p = new Principal(e.name(), set(e.writer()), set(e.reader()), set(e.operator()));
      if (e.tokenSha256() != null) {
        String hash = e.tokenSha256().toLowerCase(java.util.Locale.ROOT);
        if (!hash.matches("[0-9a-f]{64}")) {
          throw new IllegalArgumentException(where + " (" + e.name() + "): token_sha256 must be 64 hex digits");
        }
        tokens.put(hash, p);
      } else {
        certs.put(e.certificate(), p);
      }
    }
    return new Rules(Map.copyOf(tokens), Map.copyOf(certs));
  }

  private static Set<String> set(List<String> jobs) {
    return jobs == null ? Set.of() : Set.copyOf(jobs);
  }

  /** Hex SHA-256 of a token: what the access file stores instead of the token. */
  public static String sha256(String token) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
          .digest(token.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
  }
}
