package dev.frdiag.daemon.metrics;

import dev.frdiag.analysis.Lateness;
import dev.frdiag.daemon.fleet.Fleet;
import dev.frdiag.daemon.fleet.Standing;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.report.Report;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * What an operator graphs and alerts on, named after Prometheus conventions. Each daemon has its own registry, so
 * daemons embedded side by side (tests, the demo) never share counts.
 */
public final class DaemonMetrics {
  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final Counter incidents = Counter.builder().name("frdiag_incidents_total")
      .help("Incidents opened (investigations run), by what triggered them").labelNames("trigger").register(registry);
  private final Counter reports = Counter.builder().name("frdiag_reports_total")
      .help("Reports written, by verdict and symptom").labelNames("verdict", "symptom").register(registry);
  private final Counter recovered = Counter.builder().name("frdiag_hangs_recovered_total")
      .help("Hangs reported that ended by themselves (the job moved again, no rank restarted), by symptom")
      .labelNames("symptom").register(registry);
  private final Histogram detectionToReport = Histogram.builder().name("frdiag_detection_to_report_seconds")
      .help("Time from an incident's detection to its report on disk").unit(null)
      .classicUpperBounds(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300).classicOnly().register(registry);
  private final Histogram heartbeatDelay = Histogram.builder().name("frdiag_heartbeat_delay_seconds")
      .help("From a rank sending a heartbeat to the daemon taking it in, by the rank's clock and the daemon's")
      .unit(null).classicUpperBounds(0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30).classicOnly().register(registry);
  private final Counter snapshotsMissed = Counter.builder().name("frdiag_snapshots_missed_total")
      .help("Ranks asked for a snapshot that did not send one before the deadline").register(registry);
  private final Counter rejected = Counter.builder().name("frdiag_messages_rejected_total")
      .help("Rank streams and calls refused, by reason").labelNames("reason").register(registry);
  private final Counter alertFailures = Counter.builder().name("frdiag_alert_failures_total")
      .help("Alert deliveries that failed, by sink").labelNames("sink").register(registry);
  private final Gauge streams = Gauge.builder().name("frdiag_streams")
      .help("Streams open from ranks (rank) and from node relays (node), each node stream carrying many ranks")
      .labelNames("kind").register(registry);
  private final Counter partAlerts = Counter.builder().name("frdiag_part_alerts_total")
      .help("Fleet memory: parts that reached the alert score").register(registry);
  private final Counter accessDenied = Counter.builder().name("frdiag_access_denied_total")
      .help("Calls refused by authentication or authorization, by reason").labelNames("reason").register(registry);
  private final Counter connectionsRefused = Counter.builder().name("frdiag_connections_refused_total")
      .help("Connections closed as they came, over a bound: per_client (one address's share) or port_full, by port")
      .labelNames("port", "reason").register(registry);
  /** Each port's count of open connections, read at every scrape. */
  private final Map<String, IntSupplier> openConnections = new ConcurrentHashMap<>();
  private final GaugeWithCallback connections = GaugeWithCallback.builder().name("frdiag_connections")
      .help("Connections open, by port").labelNames("port")
      .callback(cb -> openConnections.forEach((p, n) -> cb.call(n.getAsInt(), p))).register(registry);

  private final Gauge rankLateness = Gauge.builder().name("frdiag_rank_lateness_seconds")
      .help("Each rank's median lateness at collectives over the straggler window: its arrival minus the other "
          + "members' median (the culprits and the latest ranks of each job)").unit(null)
      .labelNames("job", "rank").register(registry);
  private final Gauge stragglers = Gauge.builder().name("frdiag_stragglers")
      .help("Ranks the latest straggler analysis of each job named").labelNames("job").register(registry);
  /** The rank series each job has now, so that a rank no longer among them stops being served. */
  private final Map<String, Set<String>> latenessSeries = new ConcurrentHashMap<>();

  /** Rank series served per job: a 4,096-rank job shows its culprits and latest ranks, not every rank. */
  public static final int LATENESS_RANKS = 32;

  /** Counts that no registry or store backs; what a daemon part uses when built on its own (tests). */
  public DaemonMetrics() {
  }

  /** Counts, plus gauges read from the daemon's registry and store at each scrape, plus the JVM's own. */
  public DaemonMetrics(JobRegistry jobs, ReportStore store) {
    GaugeWithCallback.builder().name("frdiag_jobs").help("Jobs tracked").callback(cb ->
        cb.call(jobs.all().size())).register(registry);
    GaugeWithCallback.builder().name("frdiag_ranks").help("Ranks of the jobs tracked, by state")
        .labelNames("state").callback(cb -> {
          long connected = 0;
          long lost = 0;
          long finished = 0;
          for (var job : jobs.all()) {
            JobSummary s = job.summary();
            connected += s.getRanksConnected();
            lost += s.getRanksLost();
            finished += s.getRanksFinished();
          }
          cb.call(connected, "connected");
          cb.call(lost, "lost");
          cb.call(finished, "finished");
        }).register(registry);
    GaugeWithCallback.builder().name("frdiag_rank_records_dropped").help("Records the ranks of the jobs tracked "
        + "say their rings overwrote before they were shipped").callback(cb -> cb.call(
            jobs.all().stream().mapToLong(j -> j.droppedRecords()).sum())).register(registry);
    CounterWithCallback.builder().name("frdiag_state_refused_total")
        .help("What clients sent that the daemon refused to hold, by state (groups, context, ranks, progress, "
            + "watchers) and the limit it passed (job, daemon, watcher)")
        .labelNames("state", "scope").callback(cb -> jobs.budget().refusals().forEach((state, byScope) ->
            byScope.forEach((scope, n) -> cb.call(n, state.label(), scope.label())))).register(registry);
    GaugeWithCallback.builder().name("frdiag_state_bytes")
        .help("Bytes of heap the jobs' clients made the daemon hold, as estimated against --max-state-bytes")
        .callback(cb -> cb.call(jobs.budget().used())).register(registry);
    CounterWithCallback.builder().name("frdiag_jobs_evicted_total")
        .help("Idle jobs forgotten to make room for new ones, at the job limit or the state limit (their reports stay)")
        .callback(cb -> cb.call(jobs.evictions())).register(registry);
    CounterWithCallback.builder().name("frdiag_store_write_errors_total")
        .help("Report writes the data dir refused (disk full, read-only)")
        .callback(cb -> cb.call(store.writeErrors())).register(registry);
    GaugeWithCallback.builder().name("frdiag_store_pending_reports")
        .help("Reports written but waiting for the disk").callback(cb -> cb.call(store.pendingReports()))
        .register(registry);
    GaugeWithCallback.builder().name("frdiag_store_healthy")
        .help("1 when the data dir takes writes, 0 while it refuses them").callback(cb ->
            cb.call(store.healthy() ? 1 : 0)).register(registry);
    JvmMetrics.builder().register(registry);
  }

  /** Serves how long the oldest message the daemon has not read yet has waited, as {@code lagNanos} says. */
  public void watchIntake(LongSupplier lagNanos) {
    GaugeWithCallback.builder().name("frdiag_intake_lag_seconds").help("How long the oldest message the daemon has "
        + "not read yet has waited for a thread; above the heartbeat interval, ranks' silence is judged as of then")
        .unit(null).callback(cb -> cb.call(lagNanos.getAsLong() / 1e9)).register(registry);
  }

  /** Serves the connections {@code port} ("grpc", "metrics", "web") holds open, as {@code open} counts them. */
  public void watchConnections(String port, IntSupplier open) {
    openConnections.put(port, open);
  }

  /** A connection to {@code port} closed as it came, for {@code reason}. */
  public void connectionRefused(String port, String reason) {
    connectionsRefused.labelValues(port, reason).inc();
  }

  /** Parts whose score is served, highest first: the ones worth a graph, at a bounded number of series. */
  static final int PARTS_SERVED = 200;
  /** Parts scoring less are left out of the series: their incidents have faded. */
  static final double PART_SCORE_FLOOR = 0.05;

  /**
   * Serves the fleet memory's scores at each scrape: {@code frdiag_part_score} and {@code frdiag_part_jobs} of the
   * highest-scoring parts (at most {@value #PARTS_SERVED}, none below {@value #PART_SCORE_FLOOR}), and
   * {@code frdiag_part_alerts_total}.
   */
  public void watchFleet(Fleet fleet) {
    GaugeWithCallback.builder().name("frdiag_part_score").help("Fleet memory: the part's score, the distinct jobs "
        + "whose hangs named it, each weighing 0.5^(age / half-life)").labelNames("kind", "host", "part")
        .callback(cb -> served(fleet).forEach(s -> cb.call(s.score(), labels(s)))).register(registry);
    GaugeWithCallback.builder().name("frdiag_part_jobs").help("Fleet memory: distinct jobs whose hangs named the "
        + "part").labelNames("kind", "host", "part")
        .callback(cb -> served(fleet).forEach(s -> cb.call(s.jobs(), labels(s)))).register(registry);
    GaugeWithCallback.builder().name("frdiag_parts").help("Fleet memory: parts (hosts, GPUs, NICs, ports, links) "
        + "kept").callback(cb -> cb.call(fleet.parts())).register(registry);
  }

  private static List<Standing> served(Fleet fleet) {
    return fleet.standings(j -> true, true, null, 1).stream().filter(s -> s.score() >= PART_SCORE_FLOOR)
        .limit(PARTS_SERVED).toList();
  }

  private static String[] labels(Standing s) {
    return new String[] {s.part().kind().name().toLowerCase(Locale.ROOT), s.part().host(), s.part().name()};
  }

  /** A part reached the fleet alert score. */
  public void partAlerted() {
    partAlerts.inc();
  }

  /** The registry a {@link MetricsServer} serves. */
  public PrometheusRegistry registry() {
    return registry;
  }

  /** The latest straggler analysis of {@code job}: each shown rank's lateness and how many were named. */
  public void lateness(String job, Lateness figures, List<Integer> culprits) {
    stragglers.labelValues(job).set(culprits.size());
    Set<String> now = new HashSet<>();
    if (figures != null) {
      List<Lateness.Rank> ranks = new ArrayList<>(figures.ranks());
      ranks.sort(Comparator.comparing(Lateness.Rank::culprit).thenComparingLong(Lateness.Rank::medianLateNs)
          .reversed());
      for (Lateness.Rank r : ranks.subList(0, Math.min(LATENESS_RANKS, ranks.size()))) {
        String rank = Integer.toString(r.rank());
        rankLateness.labelValues(job, rank).set(r.medianLateNs() / 1e9);
        now.add(rank);
      }
    }
    Set<String> before = latenessSeries.put(job, now);
    if (before != null) {
      before.stream().filter(r -> !now.contains(r)).forEach(r -> rankLateness.remove(job, r));
    }
  }

  public void incidentOpened(Report.Trigger trigger) {
    incidents.labelValues(trigger.wire()).inc();
  }

  /** A reported hang ended by itself; its report was rewritten to say so. */
  public void hangRecovered(Report report) {
    recovered.labelValues(report.symptom().name()).inc();
  }

  /** A report reached the disk {@code sinceDetection} after its incident was detected. */
  public void reportWritten(Report report, Duration sinceDetection) {
    reports.labelValues(report.verdict().name(), report.symptom().name()).inc();
    detectionToReport.observe(sinceDetection.toNanos() / 1e9);
  }

  /**
   * A heartbeat sent at {@code sentAtMs} (the rank's clock) taken in at {@code nowMs}: a daemon that falls behind its
   * intake, or a rank whose reporter cannot send, shows here before the watchdog mistakes late heartbeats for a stall.
   * Clock skew between hosts shows too; a heartbeat from the future counts as no delay.
   */
  public void heartbeatTaken(long sentAtMs, long nowMs) {
    heartbeatDelay.observe(Math.max(0, nowMs - sentAtMs) / 1e3);
  }

  public void snapshotsMissed(int ranks) {
    if (ranks > 0) {
      snapshotsMissed.inc(ranks);
    }
  }

  /** A stream or call refused; {@code reason} is the status it got, e.g. INVALID_ARGUMENT. */
  public void messageRejected(String reason) {
    rejected.labelValues(reason.toLowerCase(Locale.ROOT)).inc();
  }

  public void alertFailed(String sink) {
    alertFailures.labelValues(sink).inc();
  }

  /** A rank or node stream opened ({@code kind} "rank" or "node"); {@link #streamClosed} when it ends. */
  public void streamOpened(String kind) {
    streams.labelValues(kind).inc();
  }

  public void streamClosed(String kind) {
    streams.labelValues(kind).dec();
  }

  public void accessDenied(String reason) {
    accessDenied.labelValues(reason.toLowerCase(Locale.ROOT)).inc();
  }
}
