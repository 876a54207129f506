package dev.frdiag.proto;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The version of the frdiag build these classes come from, as Maven stamped it; every module shares it. */
public final class FrdiagVersion {
  private static final String VERSION = load();

  private FrdiagVersion() {}

  /** The build's version, for example {@code 0.1.0-SNAPSHOT}. */
  public static String current() {
    return VERSION;
  }

  private static String load() {
    try (InputStream in = FrdiagVersion.class.getResourceAsStream("frdiag-version.properties")) {
      if (in == null) {
        throw new IllegalStateException("frdiag-version.properties is missing from frdiag-proto: a broken build");
      }
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
