package dev.frdiag.daemon;

import dev.frdiag.daemon.settings.Connections;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.command.CommandRunner;
import dev.frdiag.command.ConfigFile;
import dev.frdiag.command.DurationConverter;
import dev.frdiag.command.LogFormat;
import dev.frdiag.daemon.access.Security;
import dev.frdiag.daemon.alert.AlertTarget;
import dev.frdiag.daemon.fleet.FleetSettings;
import dev.frdiag.daemon.store.Retention;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code fr-daemon}: runs the daemon until SIGTERM/SIGINT. */
@Command(name = "fr-daemon", mixinStandardHelpOptions = true,
    subcommands = TokenCommand.class,
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

  @Option(names = "--straggler-interval", converter = DurationConverter.class, description = "How often each job's "
      + "records are analysed for a rank that arrives late at collectives; a straggler found is reported "
      + "(trigger straggler); 0 never (default 10s).")
  Duration stragglerInterval = DaemonSettings.DEFAULT_STRAGGLER_INTERVAL;

  @Option(names = "--straggler-window", converter = DurationConverter.class, description = "How far back those "
      + "records reach (default 60s).")
  Duration stragglerWindow = DaemonSettings.DEFAULT_STRAGGLER_WINDOW;

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

  @Option(names = "--max-jobs", description = "Jobs tracked at once; a new one makes room by forgetting the idle "
      + "job heard from longest ago (default ${DEFAULT-VALUE}).")
  int maxJobs = Limits.DEFAULT_MAX_JOBS;

  @Option(names = "--max-groups-per-rank", description = "Process groups one rank may announce "
      + "(default ${DEFAULT-VALUE}).")
  int maxGroupsPerRank = Limits.DEFAULT_MAX_GROUPS_PER_RANK;

  @Option(names = "--max-context-bytes", description = "Node context kept per job, in bytes (default ${DEFAULT-VALUE}).")
  long maxContextBytes = Limits.DEFAULT_MAX_CONTEXT_BYTES_PER_JOB;

  @Option(names = "--max-records-per-job", description = "Collective records one job's ranks may make the daemon "
      + "hold, windows and snapshots alike; a larger job keeps fewer per rank, at least 32 (default ${DEFAULT-VALUE}).")
  long maxRecordsPerJob = Limits.DEFAULT_MAX_RECORDS_PER_JOB;

  @Option(names = "--max-state-bytes", description = "Heap all jobs may take with what their clients sent (ranks, "
      + "record windows, process groups, progress, node context), in bytes; more is refused and idle jobs are "
      + "forgotten (default " + Limits.DEFAULT_STATE_SHARE_PERCENT + "% of the heap).")
  long maxStateBytes;

  @Option(names = "--max-job-state-bytes", description = "The same for one job (default "
      + Limits.DEFAULT_JOB_STATE_SHARE_PERCENT + "% of the heap).")
  long maxJobStateBytes;

  @Option(names = "--job-idle-expiry", converter = DurationConverter.class, description = "A job with no rank "
      + "connected and no open incident is forgotten after this; its reports stay (default 1h).")
  Duration jobIdleExpiry = Limits.DEFAULT_JOB_IDLE_EXPIRY;

  @Option(names = "--max-snapshot-deadline", converter = DurationConverter.class,
      description = "Longest snapshot deadline a DiagnoseNow may ask for (default 60s).")
  Duration maxSnapshotDeadline = Limits.DEFAULT_MAX_SNAPSHOT_DEADLINE;

  @Option(names = "--diagnose-interval", converter = DurationConverter.class, description = "Shortest time between "
      + "two on-demand diagnoses of one job; a request while one runs joins it (default 1s).")
  Duration diagnoseInterval = Limits.DEFAULT_DIAGNOSE_INTERVAL;

  @Option(names = "--keep-reports", description = "Reports kept per job, oldest removed first; 0 keeps all "
      + "(default ${DEFAULT-VALUE}).")
  int keepReports;

  @Option(names = "--keep-reports-for", converter = DurationConverter.class, description = "Remove reports older "
      + "than this, e.g. 30d (default: keep); a job's newest report is always kept.")
  Duration keepReportsFor;

  @Option(names = "--max-watchers", description = "WatchIncidents subscribers at once (default ${DEFAULT-VALUE}).")
  int maxWatchers = Limits.DEFAULT_MAX_WATCHERS;

  @Option(names = "--metrics-port", description = "Prometheus endpoint (/metrics) on the bind address; 0 picks a "
      + "free port, -1 turns it off (default ${DEFAULT-VALUE}).")
  int metricsPort = DaemonSettings.DEFAULT_METRICS_PORT;

  @Option(names = "--web-port", description = "Web view of jobs and reports on the bind address, behind the same "
      + "TLS and access rules as gRPC; 0 picks a free port, -1 turns it off (default ${DEFAULT-VALUE}).")
  int webPort = DaemonSettings.DEFAULT_WEB_PORT;

  @Option(names = "--tls-cert", paramLabel = "PEM", description = "The daemon's TLS certificate (PEM); with "
      + "--tls-key turns TLS on for gRPC, metrics and the web view. Reloaded when the file changes.")
  Path tlsCert;

  @Option(names = "--tls-key", paramLabel = "PEM", description = "Private key of --tls-cert (PKCS#8 PEM).")
  Path tlsKey;

  @Option(names = "--tls-client-ca", paramLabel = "PEM", description = "Require client certificates signed by "
      + "this CA (mutual TLS).")
  Path tlsClientCa;

  @Option(names = "--access-file", paramLabel = "JSON", description = "Who may write, read and operate which "
      + "jobs (tokens by SHA-256, certificate subjects); reloaded when it changes. Needed beyond loopback; without "
      + "it, anyone who reaches the daemon may.")
  Path accessFile;

  @Option(names = "--insecure", description = "Serve a non-loopback --bind without TLS (refused otherwise).")
  boolean insecure;

  @Option(names = "--open-access", description = "Serve a non-loopback --bind without an access file (refused "
      + "otherwise): anyone who reaches the daemon may stream for, read and diagnose any job. Logged as a warning.")
  boolean openAccess;

  @Option(names = "--open-metrics", description = "Let anyone scrape /metrics though --access-file is given "
      + "(otherwise a scraper needs a token or client certificate the file knows).")
  boolean openMetrics;

  @Option(names = "--header-timeout", converter = DurationConverter.class, description = "How long a new "
      + "connection, on any port, has to finish its TLS handshake and send a whole request (default 10s).")
  Duration headerTimeout = Connections.DEFAULT_HEADER_TIMEOUT;

  @Option(names = "--idle-timeout", converter = DurationConverter.class, description = "A connection with no "
      + "request in progress this long is closed (default 60s).")
  Duration idleTimeout = Connections.DEFAULT_IDLE_TIMEOUT;

  @Option(names = "--max-connections-per-client", description = "Connections one client address may hold open on "
      + "each port; more are closed as they come (default ${DEFAULT-VALUE}).")
  int maxConnectionsPerClient = Connections.DEFAULT_MAX_PER_CLIENT;

  @Option(names = "--alert", paramLabel = "KIND=URL[,jobs=GLOB]", description = "Send every report (of the jobs "
      + "matching GLOB) to a webhook (the report's JSON), Alertmanager (/api/v2/alerts) or Slack (incoming "
      + "webhook); repeatable. KIND: webhook, alertmanager, slack.")
  List<String> alerts = new ArrayList<>();

  @Option(names = "--fleet-half-life", converter = DurationConverter.class, description = "Fleet memory: how long "
      + "until a hang weighs half in a part's score (default 14d).")
  Duration fleetHalfLife = FleetSettings.DEFAULT_HALF_LIFE;

  @Option(names = "--fleet-alert-score", description = "Fleet memory: the score at which a host, GPU, NIC, port or "
      + "link is alerted on, each distinct job adding up to 1 (default ${DEFAULT-VALUE}).")
  double fleetAlertScore = FleetSettings.DEFAULT_ALERT_SCORE;

  @Option(names = "--warm-up-rounds", description = "Incidents rehearsed at start so that the first real one finds "
      + "its analysis compiled, some 4 s of one core; 0 for none (default ${DEFAULT-VALUE}).")
  int warmUpRounds = DaemonSettings.DEFAULT_WARM_UP_ROUNDS;

  @Option(names = LogFormat.OPTION, paramLabel = "text|json", description = "Log lines as key=value text or "
      + "one JSON object per line (default ${DEFAULT-VALUE}).")
  String logFormat = "text";

  @Option(names = ConfigFile.OPTION, paramLabel = "FILE", description = "A key=value file with any of the options "
      + "above (keys are option names without the dashes); command-line options win.")
  Path config;

  public static void main(String[] args) {
    // Picked before the first logger exists.
    LogFormat.configure("logback-daemon", args);
    System.exit(run(args));
  }

  /** Parses {@code args} (and the config file they name) and runs the daemon; returns the exit code. */
  static int run(String[] args) {
    return CommandRunner.of(new CommandLine(new DaemonMain()).setCaseInsensitiveEnumValuesAllowed(true))
        .readConfigFile().execute(args);
  }

  /** @throws IllegalArgumentException a usage error: a bad option or setting, said as its message */
  @Override
  public Integer call() throws InterruptedException {
    if (!logFormat.equals("text") && !logFormat.equals("json")) {
      throw new IllegalArgumentException("--log-format must be text or json, got '" + logFormat + "'");
    }
    DaemonSettings settings = DaemonSettings.builder().bindAddress(bind).port(port).dataDir(dataDir)
        .stallTimeout(stallTimeout).heartbeatTimeout(heartbeatTimeout).snapshotDeadline(snapshotDeadline)
        .stragglerInterval(stragglerInterval).stragglerWindow(stragglerWindow)
        .maxMessageBytes(maxMessageBytes).window(window).limits(Limits.builder().maxJobs(maxJobs)
            .maxGroupsPerRank(maxGroupsPerRank).maxContextBytesPerJob(maxContextBytes)
            .maxRecordsPerJob(maxRecordsPerJob).maxStateBytes(maxStateBytes).maxJobStateBytes(maxJobStateBytes)
            .jobIdleExpiry(jobIdleExpiry).maxSnapshotDeadline(maxSnapshotDeadline)
            .diagnoseInterval(diagnoseInterval).maxWatchers(maxWatchers)
            .retention(new Retention(keepReports, keepReportsFor == null ? Duration.ZERO : keepReportsFor))
            .build()).metricsPort(metricsPort).webPort(webPort)
        .warmUpRounds(warmUpRounds)
        .security(new Security(tlsCert, tlsKey, tlsClientCa, accessFile, insecure, openAccess, openMetrics))
        .connections(Connections.builder().headerTimeout(headerTimeout).idleTimeout(idleTimeout)
            .maxPerClient(maxConnectionsPerClient).build())
        .alerts(alerts.stream().flatMap(a -> Arrays.stream(a.split(";"))).map(String::strip)
            .filter(a -> !a.isEmpty()).map(AlertTarget::parse).toList())
        .fleet(FleetSettings.builder().halfLife(fleetHalfLife).alertScore(fleetAlertScore).build()).build();
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
        + dataDir.toAbsolutePath() + (daemon.metricsPort() < 0 ? "" : ", metrics on " + bind + ":"
        + daemon.metricsPort() + "/metrics") + (daemon.webPort() < 0 ? "" : ", web view on " + bind + ":"
        + daemon.webPort() + "/") + " (Ctrl-C or SIGTERM to stop)");
    stopped.await();
    return 0;
  }
}
