package dev.frdiag.daemon;

import dev.frdiag.proto.FrdiagVersion;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code fr-daemon}: runs the daemon until SIGTERM/SIGINT. */
@Command(name = "fr-daemon", mixinStandardHelpOptions = true, versionProvider = DaemonMain.Version.class,
    description = "Runs the frdiag daemon: collects flight-recorder data from ranks, detects hangs, writes reports.",
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {"0:stopped cleanly", "2:usage error", "3:could not start (port in use, data dir not writable)"})
public final class DaemonMain implements Callable<Integer> {
  @Option(names = "--bind", description = "Address to listen on (default ${DEFAULT-VALUE}; 0.0.0.0 serves a cluster).")
  String bind = DaemonSettings.DEFAULT_BIND_ADDRESS;

  @Option(names = "--port", description = "TCP port, 0 for any free one (default ${DEFAULT-VALUE}).")
  int port = DaemonSettings.DEFAULT_PORT;

  @Option(names = "--data-dir", description = "Where reports are stored (default ${DEFAULT-VALUE}).")
  Path dataDir = DaemonSettings.DEFAULT_DATA_DIR;

  @Option(names = "--stall-timeout", description = "No progress for this long opens an incident, e.g. 30s, 2m "
      + "(default 30s).", converter = DurationConverter.class)
  Duration stallTimeout = DaemonSettings.DEFAULT_STALL_TIMEOUT;

  @Option(names = "--heartbeat-timeout", description = "A rank silent this long is lost (default 15s).",
      converter = DurationConverter.class)
  Duration heartbeatTimeout = DaemonSettings.DEFAULT_HEARTBEAT_TIMEOUT;

  @Option(names = "--snapshot-deadline", description = "How long an incident waits for snapshots (default 5s).",
      converter = DurationConverter.class)
  Duration snapshotDeadline = DaemonSettings.DEFAULT_SNAPSHOT_DEADLINE;

  @Option(names = "--max-message-bytes", description = "Largest message a rank may send (default ${DEFAULT-VALUE}).")
  int maxMessageBytes = DaemonSettings.DEFAULT_MAX_MESSAGE_BYTES;

  @Option(names = "--window", description = "Records kept in memory per rank (default ${DEFAULT-VALUE}).")
  int window = DaemonSettings.DEFAULT_WINDOW;

  public static void main(String[] args) {
    // Picked before the first logger exists; an explicit -Dlogback.configurationFile still wins.
    if (System.getProperty("logback.configurationFile") == null) {
      System.setProperty("logback.configurationFile", "logback-daemon.xml");
    }
    System.exit(new CommandLine(new DaemonMain()).setCaseInsensitiveEnumValuesAllowed(true).execute(args));
  }

  @Override
  public Integer call() throws InterruptedException {
    DaemonSettings settings;
    try {
      settings = DaemonSettings.builder().bindAddress(bind).port(port).dataDir(dataDir).stallTimeout(stallTimeout)
          .heartbeatTimeout(heartbeatTimeout).snapshotDeadline(snapshotDeadline).maxMessageBytes(maxMessageBytes)
          .window(window).build();
    } catch (IllegalArgumentException e) {
      System.err.println("fr-daemon: " + e.getMessage());
      return 2;
    }
    Daemon daemon;
    try {
      daemon = new Daemon(settings).start();
    } catch (RuntimeException e) {
      System.err.println("fr-daemon: " + e.getMessage());
      return 3;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      daemon.close();
      stopped.countDown();
    }, "frdiag-shutdown"));
    System.err.println("fr-daemon listening on " + bind + ":" + daemon.port() + ", reports in "
        + dataDir.toAbsolutePath() + " (Ctrl-C or SIGTERM to stop)");
    stopped.await();
    return 0;
  }

  /** Parses "30s", "500ms", "2m", "1h" or ISO-8601 ("PT30S"). */
  public static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      return parseDuration(value);
    }
  }

  /** Parses "30s", "500ms", "2m", "1h" or ISO-8601 ("PT30S"). */
  static Duration parseDuration(String value) {
    String v = value.trim().toLowerCase();
    try {
      if (v.startsWith("pt")) {
        return Duration.parse(v.toUpperCase());
      }
      if (v.endsWith("ms")) {
        return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
      }
      long n = Long.parseLong(v.substring(0, v.length() - 1));
      return switch (v.charAt(v.length() - 1)) {
        case 's' -> Duration.ofSeconds(n);
        case 'm' -> Duration.ofMinutes(n);
        case 'h' -> Duration.ofHours(n);
        default -> throw new IllegalArgumentException();
      };
    } catch (RuntimeException e) {
      throw new CommandLine.TypeConversionException("'" + value + "' is not a duration: use e.g. 500ms, 30s, 2m");
    }
  }

  /** Prints the version Maven stamped into the build. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"fr-daemon " + FrdiagVersion.current()};
    }
  }
}
