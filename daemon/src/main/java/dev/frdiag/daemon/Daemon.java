package dev.frdiag.daemon;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import dev.frdiag.daemon.settings.DaemonSettings;
import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.daemon.access.Access;
import dev.frdiag.daemon.access.AccessInterceptor;
import dev.frdiag.daemon.access.AccessRules;
import dev.frdiag.daemon.access.Security;
import dev.frdiag.daemon.access.ServerTls;
import dev.frdiag.daemon.alert.AlertDispatcher;
import dev.frdiag.daemon.fleet.Fleet;
import dev.frdiag.daemon.metrics.DaemonMetrics;
import dev.frdiag.daemon.metrics.MetricsServer;
import dev.frdiag.daemon.ports.ConnectionGate;
import dev.frdiag.daemon.ports.GrpcListener;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.store.RankRosters;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.daemon.watchdog.IncidentWarmup;
import dev.frdiag.daemon.watchdog.Investigator;
import dev.frdiag.daemon.watchdog.Watchdog;
import dev.frdiag.daemon.web.WebServer;
import dev.frdiag.daemon.wire.CollectorService;
import dev.frdiag.daemon.wire.DiagnosisService;
import dev.frdiag.daemon.wire.IntakeExecutor;
import dev.frdiag.proto.v1.CollectorConfig;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.grpc.ServerBuilder;
import io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The frdiag daemon: gRPC server, job registry, watchdog and report store in one embeddable object.
 * {@link #start} binds; {@link #close} stops everything and is idempotent.
 */
public final class Daemon implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Daemon.class);
  /** How often reports the disk refused are tried again. */
  static final java.time.Duration STORE_RETRY = java.time.Duration.ofSeconds(5);
  /** How often the rosters of connected ranks are brought up to date on disk. */
  static final java.time.Duration ROSTER_INTERVAL = java.time.Duration.ofSeconds(1);
  /** The first wait before an alert is sent again; it doubles with each retry. */
  static final java.time.Duration ALERT_BACKOFF = java.time.Duration.ofSeconds(1);

  private final DaemonSettings settings;
  private final JobRegistry registry;
  private final ReportStore store;
  /** Which ranks each job had connected, on disk for the next start; kept by {@link #rosterKeeper}. */
  private final RankRosters rosters;
  private final ScheduledThreadPoolExecutor rosterKeeper;
  private final Investigator investigator;
  private final Watchdog watchdog;
  private final ExecutorService analysisExecutor;
  /** Runs the services' handlers for every message the transport takes in. */
  private final IntakeExecutor intakeExecutor;
  private final Server server;
  private final DaemonMetrics metrics;
  private final HealthStatusManager health = new HealthStatusManager();
  /** How connections reach the gRPC port; null when the caller supplied the transport. */
  private final GrpcListener listener;
  private MetricsServer metricsServer;
  private WebServer webServer;
  private final AccessRules rules;
  private final ServerTls tls;
  private final AlertDispatcher alerts;
  private final Fleet fleet;
  private final Object lock = new Object();
  /** Null when the caller supplied the transport: then there is no address of ours to name. */
  private final InetSocketAddress address;

  @GuardedBy("lock")
  private boolean started;

  @GuardedBy("lock")
  private boolean closed;

  /** A daemon served by Netty on the settings' address and port, over TLS when the settings give its files. */
  public Daemon(DaemonSettings settings) {
    this(settings, null, new InetSocketAddress(settings.bindAddress(), settings.port()));
  }

  /**
   * A daemon served by {@code transport} (e.g. an in-process server in tests). The settings' address and port are
   * ignored, as are Netty's keepalive settings; the message size limit and the services are applied to it.
   */
  public Daemon(DaemonSettings settings, ServerBuilder<?> transport) {
    this(settings, transport, null);
  }

  private Daemon(DaemonSettings settings, ServerBuilder<?> givenTransport, InetSocketAddress address) {
    this.settings = settings;
    this.address = address;
    this.registry = new JobRegistry(settings.window(), settings.limits());
    this.store = new ReportStore(settings.dataDir(), ReportStore::writeDurably, settings.limits().retention(),
        java.time.Clock.systemUTC());
    this.rosters = new RankRosters(settings.dataDir(), ReportStore::writeDurably);
    // The ranks connected when the daemon stopped have until the heartbeat timeout to come back, as a rank silent
    // that long counts as lost: no verdict on their job until then (DIAGNOSIS.md §3, "After a restart").
    long now = System.nanoTime();
    for (RankRosters.Roster r : rosters.load()) {
      registry.restore(r.job(), r.worldSize(), r.ranks(), r.writers(), System.currentTimeMillis(), now,
          now + settings.heartbeatTimeout().toNanos());
    }
    this.rosterKeeper = new ScheduledThreadPoolExecutor(1, daemonThreads("frdiag-rosters"));
    this.analysisExecutor = Executors.newFixedThreadPool(2, daemonThreads("frdiag-analysis"));
    ScheduledThreadPoolExecutor scheduler = new ScheduledThreadPoolExecutor(1, daemonThreads("frdiag-watchdog"));
    // Snapshot deadlines are cancelled when a gather ends early; drop them from the queue at once.
    scheduler.setRemoveOnCancelPolicy(true);
    this.metrics = new DaemonMetrics(registry, store);
    Security security = settings.security();
    this.tls = security.tls() && givenTransport == null
        ? new ServerTls(security.tlsCert(), security.tlsKey(), security.tlsClientCa(), scheduler) : null;
    this.listener = givenTransport != null ? null : new GrpcListener(new ConnectionGate(
        settings.connections().maxPerClient(), Integer.MAX_VALUE, reason -> metrics.connectionRefused("grpc", reason)),
        settings.connections(), tls != null);
    ServerBuilder<?> transport = givenTransport != null ? givenTransport : listener.applyTo(netty(settings, tls));
    if (listener != null) {
      metrics.watchConnections("grpc", listener.gate()::open);
    }
    // gRPC's default executor, a cached pool, ran each stream's waiting messages on a thread of its own, thousands at
    // 16,384 ranks: the daemon took 1.05-1.12 cores while training, 0.39-0.47 with four threads (docs/PERFORMANCE.md).
    // Handlers never wait for one another, so a bounded pool cannot deadlock; while a job's lock is held to build its
    // evidence (some 0.3 s at 16,384 ranks), the threads that reach it wait and other messages queue behind them.
    // The pool also measures how far behind it is, so that a daemon short of CPU does not take ranks whose messages
    // it has not read for silent ones (DIAGNOSIS.md §3, "A daemon behind its intake").
    this.intakeExecutor = new IntakeExecutor(Math.max(4, 2 * Runtime.getRuntime().availableProcessors()),
        daemonThreads("frdiag-intake"), System::nanoTime);
    metrics.watchIntake(intakeExecutor::lagNanos);
    transport.executor(intakeExecutor);
    this.rules = security.accessFile() == null ? null : new AccessRules(security.accessFile());
    ServerInterceptor access = rules == null ? null : new AccessInterceptor(rules, metrics::accessDenied);
    if (rules == null && givenTransport == null) {
      log.info("no access file: every caller that reaches the port may stream for, read and diagnose any job");
    }
    this.investigator = new Investigator(store, analysisExecutor, scheduler, Instant::now, System::nanoTime,
        settings.stallTimeout(), settings.limits(), metrics, settings.heartbeatInterval());
    this.watchdog = new Watchdog(registry, investigator, settings, System::nanoTime, intakeExecutor::lagNanos,
        scheduler);
    this.alerts = settings.alerts().isEmpty() ? null
        : new AlertDispatcher(settings.alerts(), ALERT_BACKOFF, metrics::alertFailed);
    if (alerts != null) {
      investigator.addSink(alerts);
    }
    // Rebuilt from the store at every start, then told every report as it is written: nothing else to keep.
    this.fleet = new Fleet(settings.fleet(), java.time.Clock.systemUTC()).rebuild(store);
    investigator.addSink(fleet);
    metrics.watchFleet(fleet);
    fleet.onAlert(part -> {
      metrics.partAlerted();
      if (alerts != null) {
        alerts.acceptPart(part);
      }
    });
    // Reports the disk refused (full, read-only) are written as soon as it takes them again.
    scheduler.scheduleWithFixedDelay(store::retryPending, STORE_RETRY.toMillis(), STORE_RETRY.toMillis(),
        TimeUnit.MILLISECONDS);
    CollectorConfig config = CollectorConfig.newBuilder()
        .setHeartbeatIntervalMs(settings.heartbeatInterval().toMillis()).build();
    this.server = transport
        // The transport limit sits above the service's own check, so a rank over the limit gets a clear
        // RESOURCE_EXHAUSTED on its stream instead of a bare transport reset; far larger frames are still cut.
        .maxInboundMessageSize(settings.maxMessageBytes() * 2 + 64 * 1024)
        .addService(guarded(new CollectorService(registry, config, settings.maxMessageBytes(),
            System::nanoTime, System::currentTimeMillis, metrics).bindService(), access))
        .addService(guarded(new DiagnosisService(registry, store, investigator, settings.snapshotDeadline(),
            settings.limits(), fleet).bindService(), access))
        // grpcurl and load balancers ask these: which services, and whether the daemon serves yet.
        .addService(health.getHealthService())
        .addService(ProtoReflectionServiceV1.newInstance())
        .build();
    // Not serving until start() has bound the port; the report store is loaded by then (constructor).
    health.setStatus("", HealthCheckResponse.ServingStatus.NOT_SERVING);
  }

  /**
   * Health and reflection stay open (load balancers, grpcurl); the frdiag services are behind the access rules, and
   * know where each call comes from (a job is bound to its writers).
   */
  private static ServerServiceDefinition guarded(ServerServiceDefinition service, ServerInterceptor access) {
    ServerServiceDefinition located = ServerInterceptors.intercept(service, Access.peers());
    return access == null ? located : ServerInterceptors.intercept(located, access);
  }

  private static NettyServerBuilder netty(DaemonSettings settings, ServerTls tls) {
    InetSocketAddress address = new InetSocketAddress(settings.bindAddress(), settings.port());
    return (tls == null ? NettyServerBuilder.forAddress(address)
        : NettyServerBuilder.forAddress(address, tls.credentials()))
        // Ranks keep streams open for the job's lifetime; allow their keepalive pings.
        .permitKeepAliveTime(10, TimeUnit.SECONDS)
        .permitKeepAliveWithoutCalls(true)
        // A host that vanishes without closing its connections (power loss, partition) is detected here: its
        // streams end, and its ranks count as lost.
        .keepAliveTime(10, TimeUnit.SECONDS)
        .keepAliveTimeout(5, TimeUnit.SECONDS);
  }

  /**
   * Binds the port and starts the watchdog.
   *
   * @throws UncheckedIOException when the port cannot be bound
   */
  public Daemon start() {
    synchronized (lock) {
      if (started) {
        return this;
      }
      checkExposure();
      try {
        server.start();
      } catch (IOException e) {
        throw new UncheckedIOException((address == null ? "cannot start the server"
            : "cannot listen on " + settings.bindAddress() + ":" + settings.port()) + ": " + e.getMessage(), e);
      }
      try {
        boolean clientCertificates = settings.security().tlsClientCa() != null;
        if (settings.metricsPort() >= 0) {
          // With an access file, scrapers show its credentials too, unless the operator opened the port on purpose.
          AccessRules scrapers = settings.security().openMetrics() ? null : rules;
          metricsServer = new MetricsServer(metrics, settings.bindAddress(), settings.metricsPort(),
              tls == null ? null : tls.sslContext(), clientCertificates, scrapers, metrics::accessDenied,
              settings.connections(), reason -> metrics.connectionRefused("metrics", reason));
          metrics.watchConnections("metrics", metricsServer.connections()::open);
        }
        if (settings.webPort() >= 0) {
          webServer = new WebServer(store, registry, rules, metrics::accessDenied, settings.bindAddress(),
              settings.webPort(), tls == null ? null : tls.sslContext(), clientCertificates, settings.connections(),
              reason -> metrics.connectionRefused("web", reason), fleet);
          metrics.watchConnections("web", webServer.connections()::open);
        }
      } catch (UncheckedIOException e) {
        server.shutdownNow();
        if (metricsServer != null) {
          metricsServer.close();
        }
        if (listener != null) {
          listener.close();
        }
        throw e;
      }
      watchdog.start();
      rosterKeeper.scheduleWithFixedDelay(this::keepRosters, ROSTER_INTERVAL.toMillis(), ROSTER_INTERVAL.toMillis(),
          TimeUnit.MILLISECONDS);
      health.setStatus("", HealthCheckResponse.ServingStatus.SERVING);
      // Compile the analysis before the first incident needs it; low priority work on an idle executor.
      if (settings.warmUpRounds() > 0) {
        analysisExecutor.execute(() -> {
          long t0 = System.nanoTime();
          IncidentWarmup.run(settings.warmUpRounds());
          log.info("incident path compiled ahead (rehearsed for {} ms)", (System.nanoTime() - t0) / 1_000_000);
        });
      }
      started = true;
    }
    String where = address == null ? server.getListenSockets().toString() : settings.bindAddress() + ":" + port();
    String scheme = tls == null ? "http://" : "https://";
    log.info("frdiag daemon listening on {} data-dir={} stall-timeout={}s metrics={} web={}", where,
        settings.dataDir().toAbsolutePath(), settings.stallTimeout().toMillis() / 1000.0,
        metricsServer == null ? "off" : scheme + settings.bindAddress() + ":" + metricsServer.port() + "/metrics",
        webServer == null ? "off" : scheme + settings.bindAddress() + ":" + webServer.port() + "/");
    return this;
  }

  /** The bound port (the real one when started with port 0); -1 when the transport has no port. */
  public int port() {
    return server.getPort();
  }

  private void checkExposure() {
    if (address != null) {
      exposure(settings.bindAddress(), settings.port(), settings.security()).forEach(log::warn);
    }
  }

  /**
   * Refuses to serve beyond loopback in plaintext or without an access file, unless asked for: anyone who reaches
   * the port could read every job's reports, feed any job false records and have a false report written. Returns the
   * warnings to log for what was asked for.
   *
   * @throws IllegalStateException naming what is missing and how to ask for it
   */
  static java.util.List<String> exposure(String bindAddress, int port, Security security) {
    boolean loopback;
    try {
      loopback = java.net.InetAddress.getByName(bindAddress).isLoopbackAddress();
    } catch (java.net.UnknownHostException e) {
      throw new IllegalArgumentException("cannot resolve --bind " + bindAddress + ": " + e.getMessage());
    }
    if (loopback) {
      return java.util.List.of();
    }
    if (!security.tls() && !security.insecure()) {
      throw new IllegalStateException("refusing to serve " + bindAddress + " in plaintext: give "
          + "--tls-cert and --tls-key (and --access-file), or --insecure to serve without TLS on purpose");
    }
    if (security.accessFile() == null && !security.openAccess()) {
      throw new IllegalStateException("refusing to serve " + bindAddress + " without --access-file: anyone who "
          + "reaches it could stream false records for any job and read every report; give --access-file (README, "
          + "\"Serving a cluster\"), or --open-access to let everyone in on purpose");
    }
    java.util.List<String> warnings = new java.util.ArrayList<>();
    if (!security.tls()) {
      warnings.add("serving " + bindAddress + " WITHOUT TLS (--insecure): anyone who reaches port " + port
          + " can read reports and feed jobs");
    }
    if (security.openAccess()) {
      warnings.add("OPEN ACCESS (--open-access): serving " + bindAddress + " with no access file; anyone who reaches "
          + "port " + port + " may stream for, read and diagnose any job, bound only to the host that first wrote it");
    }
    return warnings;
  }

  /** Writes the roster of each job whose connected ranks changed, on the roster keeper's thread or at close. */
  private void keepRosters() {
    try {
      Map<String, Long> digests = new HashMap<>();
      for (Job job : registry.all()) {
        digests.put(job.id(), job.connectedDigest());
      }
      rosters.keep(digests, id -> registry.find(id).map(j -> new RankRosters.Roster(id, j.worldSize(),
          j.connected(), j.writers())).orElse(null));
    } catch (RuntimeException e) {
      // The next look writes what this one could not.
      log.warn("keeping the rank rosters failed: {}", e.toString());
    }
  }

  /** The Prometheus endpoint's port; -1 when metrics are not served. */
  public int metricsPort() {
    return metricsServer == null ? -1 : metricsServer.port();
  }

  /** The web view's port; -1 when it is not served. */
  public int webPort() {
    return webServer == null ? -1 : webServer.port();
  }

  /** The address of {@code report}'s page, or empty when the web view is not served. */
  public java.util.Optional<String> pageOf(dev.frdiag.report.Report report) {
    return webServer == null ? java.util.Optional.empty() : java.util.Optional.of((tls == null ? "http://"
        : "https://") + settings.bindAddress() + ":" + webServer.port() + "/reports/" + report.reportId());
  }

  /** The reports written so far and from earlier runs on the same data dir. */
  public ReportStore store() {
    return store;
  }

  /** Which parts keep showing up in the stored reports' hangs. */
  public Fleet fleet() {
    return fleet;
  }

  /** The jobs this daemon tracks. */
  public JobRegistry registry() {
    return registry;
  }

  /** Stops intake, lets calls in flight finish for up to 5 s, then forces everything down. */
  @Override
  public void close() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
    }
    health.enterTerminalState();
    watchdog.close();
    // While the ranks are still connected: the next start expects them back.
    rosterKeeper.shutdown();
    try {
      if (rosterKeeper.awaitTermination(5, TimeUnit.SECONDS)) {
        keepRosters();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (metricsServer != null) {
      metricsServer.close();
    }
    if (webServer != null) {
      webServer.close();
    }
    server.shutdown();
    try {
      if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
        server.shutdownNow();
        server.awaitTermination(2, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
    if (listener != null) {
      listener.close();
    }
    intakeExecutor.shutdownNow();
    analysisExecutor.shutdownNow();
    if (tls != null) {
      tls.close();
    }
    if (alerts != null) {
      alerts.close();
    }
    log.info("frdiag daemon stopped");
  }

  private static java.util.concurrent.ThreadFactory daemonThreads(String name) {
    return new ThreadFactoryBuilder().setNameFormat(name).setDaemon(true).build();
  }
}
