package dev.frdiag.testing.tls;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A certificate authority made in a folder by {@code openssl}, and certificates it signs: a server certificate for
 * 127.0.0.1 and client certificates by common name. Keys are unencrypted PKCS#8 PEM, valid for two days.
 */
public final class TestCertificates {
  private final Path dir;
  private final String name;

  private TestCertificates(Path dir, String name) {
    this.dir = dir;
    this.name = name;
  }

  /** A new CA called {@code name} in {@code dir}. */
  public static TestCertificates authority(Path dir, String name) throws IOException, InterruptedException {
    TestCertificates ca = new TestCertificates(dir, name);
    openssl(dir, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", name + "-ca.key", "-out",
        name + "-ca.pem", "-days", "2", "-subj", "/CN=" + name + " test CA");
    return ca;
  }

  public Path caCertificate() {
    return dir.resolve(name + "-ca.pem");
  }

  /** A certificate for a server on 127.0.0.1 (and localhost): {@code [certificate, key]}. */
  public Path[] server(String file) throws IOException, InterruptedException {
    return sign(file, "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost");
  }

  /** A client certificate with common name {@code cn}: {@code [certificate, key]}. */
  public Path[] client(String file, String cn) throws IOException, InterruptedException {
    return sign(file, cn, "extendedKeyUsage=clientAuth");
  }

  private Path[] sign(String file, String cn, String extension) throws IOException, InterruptedException {
    Path ext = dir.resolve(file + ".ext");
    Files.writeString(ext, extension + "\n", StandardCharsets.UTF_8);
    openssl(dir, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", file + ".key", "-out", file + ".csr", "-subj",
        "/CN=" + cn);
    openssl(dir, "x509", "-req", "-in", file + ".csr", "-CA", caCertificate().getFileName().toString(), "-CAkey",
        name + "-ca.key", "-CAcreateserial", "-out", file + ".pem", "-days", "2", "-extfile", ext.getFileName()
            .toString());
    return new Path[] {dir.resolve(file + ".pem"), dir.resolve(file + ".key")};
  }

  private static void openssl(Path dir, String... args) throws IOException, InterruptedException {
    List<String> command = new java.util.ArrayList<>();
    command.add("openssl");
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("openssl " + String.join(" ", args) + " failed: " + out);
    }
  }
}
