package dev.frdiag.daemon.settings;

import dev.frdiag.daemon.access.Security;
import dev.frdiag.daemon.alert.AlertTarget;
import dev.frdiag.daemon.fleet.FleetSettings;
import dev.frdiag.proto.Contract;
import dev.frdiag.proto.MessageLimits;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How a daemon runs. Build with {@link #builder()}; every value is validated.
 *
 * @param bindAddress address to listen on (default 127.0.0.1; use 0.0.0.0 to serve a cluster)
 * @param port TCP port (default {@link Contract#DEFAULT_PORT}; 0 picks a free one)
 * @param dataDir where reports are stored (default ./frdiag-data)
 * @param stallTimeout how long a process group with outstanding work may make no progress before an
 *     incident opens (default 30 s)
 * @param heartbeatTimeout how long a rank may stay silent before it counts as lost (default 15 s)
 * @param lostGrace how long after a rank is lost the incident opens, so the hang it causes is visible
 *     (default: the stall timeout)
 * @param snapshotDeadline how long an incident waits for rank snapshots (default 5 s)
 * @param heartbeatInterval the interval ranks are asked to heartbeat at (default 1 s)
 * @param maxMessageBytes largest message a rank may send (default 4 MiB)
 * @param window records kept in memory per rank between snapshots (default 512)
 * @param limits bounds on what clients can make the daemon hold (default {@link Limits#defaults()})
 * @param security TLS files, access file, and whether plaintext beyond loopback is wanted (default none)
 * @param alerts where reports are sent as they are written (default none)
 * @param metricsPort the Prometheus endpoint's port on the bind address: 0 picks a free one, -1 (the builder's
 *     default, for embedded daemons) serves none; {@code fr-daemon} serves it on {@value #DEFAULT_METRICS_PORT}
 * @param webPort the web view's port on the bind address, as {@code metricsPort}; {@code fr-daemon} serves it on
 *     {@value #DEFAULT_WEB_PORT}
 * @param connections what every port grants one connection and one client (default {@link Connections#defaults()})
 * @param stragglerInterval how often each job's records are analysed for a straggler (default 10 s); zero: never
 * @param stragglerWindow how far back those records reach (default 60 s)
 * @param fleet how the parts that keep showing up in hangs are scored and alerted on (default
 *     {@link FleetSettings#defaults()})
 * @param warmUpRounds incidents rehearsed at start so that the first real one finds its analysis compiled (default
 *     {@value #DEFAULT_WARM_UP_ROUNDS}, some 4 s of one core); 0 rehearses none
 */
public record DaemonSettings(String bindAddress, int port, Path dataDir, Duration stallTimeout,
    Duration heartbeatTimeout, Duration lostGrace, Duration snapshotDeadline, Duration heartbeatInterval,
    int maxMessageBytes, int window, Limits limits, int metricsPort, Security security, List<AlertTarget> alerts,
    int webPort, Connections connections, Duration stragglerInterval, Duration stragglerWindow,
    FleetSettings fleet, int warmUpRounds) {

  public static final String DEFAULT_BIND_ADDRESS = "127.0.0.1";
  public static final int DEFAULT_PORT = Contract.DEFAULT_PORT;
  public static final Path DEFAULT_DATA_DIR = Path.of("frdiag-data");
  public static final Duration DEFAULT_STALL_TIMEOUT = Duration.ofSeconds(30);
  public static final Duration DEFAULT_HEARTBEAT_TIMEOUT = Duration.ofSeconds(15);
  public static final Duration DEFAULT_SNAPSHOT_DEADLINE = Duration.ofSeconds(5);
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(1);
  public static final int DEFAULT_MAX_MESSAGE_BYTES = MessageLimits.DEFAULT_MAX_MESSAGE_BYTES;
  public static final int DEFAULT_WINDOW = 512;
  public static final int DEFAULT_METRICS_PORT = 9551;
  public static final int DEFAULT_WEB_PORT = 9552;
  public static final Duration DEFAULT_STRAGGLER_INTERVAL = Duration.ofSeconds(10);
  public static final Duration DEFAULT_STRAGGLER_WINDOW = Duration.ofSeconds(60);
  public static final int DEFAULT_WARM_UP_ROUNDS = 200;

  public DaemonSettings {
    Objects.requireNonNull(bindAddress, "bindAddress");
    Objects.requireNonNull(dataDir, "dataDir");
    Objects.requireNonNull(limits, "limits");
    Objects.requireNonNull(security, "security");
    Objects.requireNonNull(connections, "connections");
    Objects.requireNonNull(fleet, "fleet");
    alerts = List.copyOf(alerts);
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port must be within 0..65535, got " + port);
    }
    Limits.positive(stallTimeout, "stallTimeout");
    Limits.positive(heartbeatTimeout, "heartbeatTimeout");
    Limits.positive(lostGrace, "lostGrace");
    Limits.positive(snapshotDeadline, "snapshotDeadline");
    Limits.positive(heartbeatInterval, "heartbeatInterval");
    if (maxMessageBytes < 64 * 1024) {
      throw new IllegalArgumentException("maxMessageBytes must be at least 64 KiB, got " + maxMessageBytes);
    }
    optionalPort(metricsPort, "metricsPort");
    optionalPort(webPort, "webPort");
    if (window < 1) {
      throw new IllegalArgumentException("window must be at least 1, got " + window);
    }
    Objects.requireNonNull(stragglerInterval, "stragglerInterval");
    if (stragglerInterval.isNegative()) {
      throw new IllegalArgumentException("stragglerInterval must not be negative, got " + stragglerInterval);
    }
    Limits.positive(stragglerWindow, "stragglerWindow");
    if (warmUpRounds < 0) {
      throw new IllegalArgumentException("warmUpRounds must not be negative, got " + warmUpRounds);
    }
  }

  /** How often the watchdog looks: often enough to react within a fraction of the stall timeout. */
  public Duration checkInterval() {
    Duration quarter = stallTimeout.dividedBy(4);
    return quarter.compareTo(Duration.ofSeconds(1)) > 0 ? Duration.ofSeconds(1)
        : quarter.compareTo(Duration.ofMillis(50)) < 0 ? Duration.ofMillis(50) : quarter;
  }

  /** A port that may be off (-1) or picked by the system (0). */
  private static void optionalPort(int port, String name) {
    if (port < -1 || port > 65_535) {
      throw new IllegalArgumentException(name + " must be within -1..65535, got " + port);
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder for {@link DaemonSettings}, starting from the documented defaults. */
  public static final class Builder {
    private String bindAddress = DEFAULT_BIND_ADDRESS;
    private int port = DEFAULT_PORT;
    private Path dataDir = DEFAULT_DATA_DIR;
    private Duration stallTimeout = DEFAULT_STALL_TIMEOUT;
    private Duration heartbeatTimeout = DEFAULT_HEARTBEAT_TIMEOUT;
    private Duration lostGrace;
    private Duration snapshotDeadline = DEFAULT_SNAPSHOT_DEADLINE;
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
    private int maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES;
    private int window = DEFAULT_WINDOW;
    private Limits limits = Limits.defaults();
    private int metricsPort = -1;
    private int webPort = -1;
    private int warmUpRounds = DEFAULT_WARM_UP_ROUNDS;
    private Security security = Security.none();
    private List<AlertTarget> alerts = List.of();
    private Connections connections = Connections.defaults();
    private Duration stragglerInterval = DEFAULT_STRAGGLER_INTERVAL;
    private Duration stragglerWindow = DEFAULT_STRAGGLER_WINDOW;
    private FleetSettings fleet = FleetSettings.defaults();

    public Builder bindAddress(String v) {
      bindAddress = v;
      return this;
    }

    public Builder port(int v) {
      port = v;
      return this;
    }

    public Builder dataDir(Path v) {
      dataDir = v;
      return this;
    }

    public Builder stallTimeout(Duration v) {
      stallTimeout = v;
      return this;
    }

    public Builder heartbeatTimeout(Duration v) {
      heartbeatTimeout = v;
      return this;
    }

    public Builder lostGrace(Duration v) {
      lostGrace = v;
      return this;
    }

    public Builder snapshotDeadline(Duration v) {
      snapshotDeadline = v;
      return this;
    }

    public Builder heartbeatInterval(Duration v) {
      heartbeatInterval = v;
      return this;
    }

    public Builder maxMessageBytes(int v) {
      maxMessageBytes = v;
      return this;
    }

    public Builder window(int v) {
      window = v;
      return this;
    }

    public Builder limits(Limits v) {
      limits = v;
      return this;
    }

    public Builder metricsPort(int v) {
      metricsPort = v;
      return this;
    }

    public Builder webPort(int v) {
      webPort = v;
      return this;
    }

    public Builder warmUpRounds(int v) {
      warmUpRounds = v;
      return this;
    }

    public Builder alerts(List<AlertTarget> v) {
      alerts = v;
      return this;
    }

    public Builder security(Security v) {
      security = v;
      return this;
    }

    public Builder connections(Connections v) {
      connections = v;
      return this;
    }

    public Builder fleet(FleetSettings v) {
      fleet = v;
      return this;
    }

    public DaemonSettings build() {
      return new DaemonSettings(bindAddress, port, dataDir, stallTimeout, heartbeatTimeout,
          lostGrace == null ? stallTimeout : lostGrace, snapshotDeadline, heartbeatInterval, maxMessageBytes,
          window, limits, metricsPort, security, alerts, webPort, connections, stragglerInterval,
          stragglerWindow, fleet, warmUpRounds);
    }

    public Builder stragglerInterval(Duration v) {
      stragglerInterval = v;
      return this;
    }

    public Builder stragglerWindow(Duration v) {
      stragglerWindow = v;
      return this;
    }
  }
}
