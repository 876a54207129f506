package dev.frdiag.daemon.watchdog;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.RecordTimelines;
import dev.frdiag.analysis.StragglerAnalyzer;
import dev.frdiag.daemon.metrics.DaemonMetrics;
import dev.frdiag.daemon.registry.Gather;
import dev.frdiag.daemon.registry.Incident;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.LimitExceededException;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.daemon.store.ReportNotStoredException;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportDraft;
import dev.frdiag.report.ReportSink;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gather protocol and publishing: asks every rank of a job whose window cannot stand for one for a fresh snapshot
 * (the job's {@link Incident} keeps the {@link Gather}), waits until all answered, a quorum did, or the deadline
 * passed (a rank that did not answer is evidence, not an error), analyses, stores the report and hands it to the
 * sinks. It keeps no state of any job: what an investigation changes lives in the job's incident.
 */
public final class Investigator {
  private static final Logger log = LoggerFactory.getLogger(Investigator.class);

  private final ReportStore store;
  private final Executor executor;
  private final Supplier<Instant> clock;
  private final LongSupplier nanoTime;
  private final Duration stallThreshold;
  private final AtomicLong requestIds = new AtomicLong();
  // Watchers come and go rarely; every report walks the list, from the analysis threads.
  private final List<ReportSink> sinks = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService scheduler;
  private final Limits limits;
  private final DaemonMetrics metrics;
  /** How old, before the snapshot request, a rank's current window may be and still stand for its snapshot. */
  private final Duration standInAge;

  /** How often an on-demand diagnosis waiting for ranks to come back after a restart looks again. */
  static final Duration RETURN_CHECK = Duration.ofMillis(100);
  /** How often an open gather looks whether it has a quorum. */
  static final Duration QUORUM_CHECK = Duration.ofMillis(50);
  /** How long replies must have stopped before a quorum is taken as final. */
  static final Duration QUORUM_QUIET = Duration.ofMillis(300);

  public Investigator(ReportStore store, Executor executor, ScheduledExecutorService scheduler,
      Supplier<Instant> clock, LongSupplier nanoTime, Duration stallThreshold) {
    this(store, executor, scheduler, clock, nanoTime, stallThreshold, Limits.defaults(), new DaemonMetrics());
  }

  public Investigator(ReportStore store, Executor executor, ScheduledExecutorService scheduler,
      Supplier<Instant> clock, LongSupplier nanoTime, Duration stallThreshold, Limits limits,
      DaemonMetrics metrics) {
    this(store, executor, scheduler, clock, nanoTime, stallThreshold, limits, metrics,
        DaemonSettings.DEFAULT_HEARTBEAT_INTERVAL);
  }

  /** @param heartbeatInterval how often ranks send heartbeats: a window current within two of them stands in */
  public Investigator(ReportStore store, Executor executor, ScheduledExecutorService scheduler,
      Supplier<Instant> clock, LongSupplier nanoTime, Duration stallThreshold, Limits limits,
      DaemonMetrics metrics, Duration heartbeatInterval) {
    this.standInAge = heartbeatInterval.multipliedBy(2);
    this.limits = limits;
    this.metrics = metrics;
    this.store = store;
    this.executor = executor;
    this.scheduler = scheduler;
    this.clock = clock;
    this.nanoTime = nanoTime;
    this.stallThreshold = stallThreshold;
  }

  public void addSink(ReportSink sink) {
    sinks.add(sink);
  }

  public void removeSink(ReportSink sink) {
    sinks.remove(sink);
  }

  /**
   * A diagnosis someone asked for: joins the one already running for the job, and is refused (with the wait) when
   * the job was diagnosed on demand less than the limits' interval ago or too many are running daemon-wide. While
   * ranks connected before the daemon restarted are not back, it waits for them.
   *
   * @throws LimitExceededException when refused
   */
  public CompletableFuture<Report> investigateOnDemand(Job job, Duration deadline) {
    if (job.awaitingReturn(nanoTime.getAsLong())) {
      // Ranks connected before the daemon restarted are not back yet: a diagnosis now would take them for dead
      // (DIAGNOSIS.md §3, "After a restart"). It starts once they are, or their time has passed.
      CompletableFuture<Report> later = new CompletableFuture<>();
      scheduler.schedule(() -> {
        try {
          investigateOnDemand(job, deadline).whenComplete((report, error) -> {
            if (error != null) {
              later.completeExceptionally(error);
            } else {
              later.complete(report);
            }
          });
        } catch (RuntimeException e) {
          later.completeExceptionally(e);
        }
      }, RETURN_CHECK.toMillis(), TimeUnit.MILLISECONDS);
      return later;
    }
    CompletableFuture<Report> mine = new CompletableFuture<>();
    CompletableFuture<Report> running = job.incident().joinOrClaimOnDemand(nanoTime.getAsLong(),
        limits.diagnoseInterval(), mine);
    if (running != mine) {
      return running;
    }
    // When the disk refuses the report, the caller is told so now rather than waiting for a disk that may not free.
    investigate(job, Report.Trigger.ON_DEMAND, deadline, mine::completeExceptionally).whenComplete((report, error) -> {
      if (error != null) {
        mine.completeExceptionally(error);
      } else {
        mine.complete(report);
      }
    });
    return mine;
  }

  /**
   * Builds {@code job}'s records from its windows on the analysis thread, ahead of an incident that may come
   * ({@link Job#prepareEvidence}).
   */
  public void prepareEvidence(Job job) {
    try {
      executor.execute(() -> {
        long start = nanoTime.getAsLong();
        try {
          int ranks = job.prepareEvidence();
          log.info("job={} windows of {} ranks built ahead of a possible stall in {} ms", job.id(), ranks,
              Duration.ofNanos(nanoTime.getAsLong() - start).toMillis());
        } catch (RuntimeException e) {
          // Only time is lost: the incident, if it comes, builds what is missing.
          log.error("job={} building records ahead failed", job.id(), e);
        }
      });
    } catch (RejectedExecutionException e) {
      // Closing: no incident will need it.
    }
  }

  /**
   * Investigates {@code job} now; the future completes with the stored report. For any trigger but
   * {@link Report.Trigger#ON_DEMAND}, this is the investigation of the job's open incident.
   */
  public CompletableFuture<Report> investigate(Job job, Report.Trigger trigger, Duration requestedDeadline) {
    return investigate(job, trigger, requestedDeadline, refused -> { });
  }

  /**
   * As {@link #investigate(Job, Report.Trigger, Duration)}, and {@code notStored} is told when the data dir refuses
   * the report: the future then completes only once the disk takes it.
   */
  CompletableFuture<Report> investigate(Job job, Report.Trigger trigger, Duration requestedDeadline,
      Consumer<ReportNotStoredException> notStored) {
    Duration deadline = requestedDeadline.compareTo(limits.maxSnapshotDeadline()) > 0 ? limits.maxSnapshotDeadline()
        : requestedDeadline;
    Instant start = clock.get();
    long detectedNanos = nanoTime.getAsLong();
    metrics.incidentOpened(trigger);
    ReportDraft draft = ReportDraft.of(job.id(), trigger).scheduler(job.scheduler()).step(start, describe(trigger));
    // Ranks whose windows are as current as a snapshot are not asked for one (DIAGNOSIS.md §3, "Windows that stand
    // for snapshots"): at 16,384 ranks their replies took 0.6-1 s to gather.
    Set<Integer> standIns = job.currentWindows(epochNanos(start) - standInAge.toNanos());
    DumpRequest request = DumpRequest.newBuilder().setRequestId(requestIds.incrementAndGet())
        .setReason("frdiag: " + describe(trigger)).setDeadlineMs(deadline.toMillis()).setMaxRecords(job.window())
        .setRecordsOnStreamOk(true).build();
    Incident incident = job.incident();
    // Started before any rank is asked: a reply, or a rank's new stream, may come at once.
    Gather gather = incident.startGather(request, standIns, trigger != Report.Trigger.ON_DEMAND, nanoTime);
    Map<Integer, String> asked = job.requestDumps(request, standIns);
    String standing = "the windows of " + standIns.size() + (asked.isEmpty() ? " connected" : " other")
        + " ranks stand for theirs (every record had reached the daemon at most " + standInAge.toMillis()
        + " ms before)";
    draft.step(start, asked.isEmpty() ? "no snapshot requested: " + standing
        : "snapshots requested from " + asked.size() + " connected ranks (deadline " + deadline.toMillis() + " ms)"
            + (standIns.isEmpty() ? "" : "; " + standing));
    gather.expect(asked);
    // Stragglers: once nearly every rank answered and the replies stopped coming, waiting out the deadline for the
    // last few only delays the answer; their stored windows stand in for them and the report says so.
    ScheduledFuture<?> quorum = scheduler.scheduleWithFixedDelay(() -> gather.finishOnQuorum(QUORUM_QUIET.toNanos()),
        QUORUM_CHECK.toMillis(), QUORUM_CHECK.toMillis(), TimeUnit.MILLISECONDS);
    // On our scheduler rather than completeOnTimeout's shared one, so that a gather finished early leaves no task
    // waiting out its deadline behind it.
    ScheduledFuture<?> timeout = scheduler.schedule(gather::finish, deadline.toMillis(), TimeUnit.MILLISECONDS);
    gather.done().whenComplete((v, e) -> {
      // At once, not when the analysis thread gets to it: from here on replies are turned away on arrival.
      incident.endGather(gather);
      quorum.cancel(false);
      timeout.cancel(false);
    });
    return gather.done()
        .thenComposeAsync(ignored -> {
          incident.endGather(gather);
          Map<Integer, DumpReply> replies = gather.replies();
          int askedInAll = gather.expectedCount();
          metrics.snapshotsMissed(askedInAll - replies.size());
          Instant gathered = clock.get();
          if (askedInAll > 0) {
            draft.step(gathered, replies.size() + " of " + askedInAll + " snapshots received after "
                + Duration.between(start, gathered).toMillis() + " ms"
                + (askedInAll > asked.size() ? " (" + (askedInAll - asked.size())
                    + " asked again on a stream opened meanwhile)" : ""));
          }
          JobEvidence evidence = job.evidence(replies, standIns, epochNanos(gathered), stallThreshold,
              "no snapshot within " + deadline.toMillis() + " ms");
          Instant built = clock.get();
          Diagnosis diagnosis = HangAnalyzer.analyze(evidence);
          Instant now = clock.get();
          log.info("job={} evidence of {} ranks ({} snapshots said their records were on the stream) built in {} ms,"
              + " analysed in {} ms", job.id(), evidence.ranks().size(),
              replies.values().stream().filter(DumpReply::getRecordsOnStream).count(),
              Duration.between(gathered, built).toMillis(), Duration.between(built, now).toMillis());
          Report report = draft.finish(store.nextReportId(job.id()), diagnosis, now, "analysed "
              + evidence.ranks().size() + " ranks in " + Duration.between(gathered, now).toMillis()
              + " ms; report written");
          return durably(job, report, detectedNanos, notStored);
        }, executor);
  }

  /**
   * Analyses {@code job}'s records of the last {@code window} for a straggler, on the analysis executor, and serves
   * each rank's lateness as metrics; stores nothing. The job's windows are read as they stand: no rank is asked.
   */
  public CompletableFuture<Diagnosis> stragglers(Job job, Duration window) {
    return CompletableFuture.supplyAsync(() -> {
      Instant now = clock.get();
      JobEvidence evidence = job.evidence(Map.of(), Set.of(), epochNanos(now), stallThreshold, "");
      Diagnosis d = StragglerAnalyzer.analyze(RecordTimelines.of(evidence, epochNanos(now) - window.toNanos()));
      metrics.lateness(job.id(), d.lateness(), d.culpritRanks());
      return d;
    }, executor);
  }

  /**
   * Stores a straggler analysis' diagnosis of {@code job} as a report (trigger {@code straggler}) and hands it to
   * the sinks once on disk.
   */
  public CompletableFuture<Report> reportStraggler(Job job, Diagnosis d, String how) {
    metrics.incidentOpened(Report.Trigger.STRAGGLER);
    long detectedNanos = nanoTime.getAsLong();
    Report report = ReportDraft.of(job.id(), Report.Trigger.STRAGGLER).scheduler(job.scheduler())
        .finish(store.nextReportId(job.id()), d, clock.get(), describe(Report.Trigger.STRAGGLER) + ": " + how);
    return durably(job, report, detectedNanos, refused -> { });
  }

  /**
   * Rewrites report {@code reportId} of {@code job}, a hang that ended by itself: it says when, offers nothing to
   * drain or exclude, and its sinks hear of it again (alerts resolve, fleet memory takes back what it counted;
   * DIAGNOSIS.md §3, "A stall that ends by itself"). A report that is not a hang's, or was rewritten already, stays.
   */
  public void recovered(Job job, String reportId) {
    Instant at = clock.get();
    try {
      executor.execute(() -> rewriteRecovered(job, reportId, at));
    } catch (RejectedExecutionException e) {
      log.warn("job {}: its hang ended by itself, but the daemon is stopping: report {} stays as it was", job.id(),
          reportId);
    }
  }

  private void rewriteRecovered(Job job, String reportId, Instant at) {
    Report report;
    try {
      report = store.get(reportId).orElse(null);
    } catch (RuntimeException e) {
      log.warn("job {}: its hang ended by itself, but report {} cannot be read to say so: {}", job.id(), reportId,
          e.getMessage());
      return;
    }
    if (report == null || report.verdict() != Verdict.HANG || report.recoveredAt() != null) {
      return;
    }
    Report updated = report.recovered(at);
    log.info("report {} job={}: the hang ended by itself ({})", reportId, job.id(),
        updated.timeline().get(updated.timeline().size() - 1).event());
    store.save(updated, stored -> {
      metrics.hangRecovered(stored);
      announce(stored);
    }, why -> log.warn("report {} of job {}: its recovery waits for the disk: {}", reportId, job.id(), why));
  }

  /**
   * Stores {@code report}; it is announced only once on disk, so whatever a watcher or a caller was told survives a
   * crash. Its verdict is logged first: whatever the disk does, it is not lost.
   */
  private CompletableFuture<Report> durably(Job job, Report report, long detectedNanos,
      Consumer<ReportNotStoredException> notStored) {
    log.info("report {} job={} verdict={} symptom={} culprits={} trigger={}", report.reportId(), job.id(),
        report.verdict(), report.symptom(), report.culpritRanks(), report.trigger());
    CompletableFuture<Report> durable = new CompletableFuture<>();
    store.save(report, stored -> {
      job.reportWritten(stored.reportId());
      metrics.reportWritten(stored, Duration.ofNanos(nanoTime.getAsLong() - detectedNanos));
      announce(stored);
      durable.complete(stored);
    }, why -> notStored.accept(new ReportNotStoredException(report, why)));
    return durable;
  }

  private void announce(Report report) {
    for (ReportSink sink : sinks) {
      try {
        sink.accept(report);
      } catch (RuntimeException e) {
        log.warn("report sink failed for {}: {}", report.reportId(), e.toString());
      }
    }
  }

  private static String describe(Report.Trigger trigger) {
    return switch (trigger) {
      case STALL -> "stall detected: a process group with outstanding work stopped making progress";
      case RANK_LOST -> "rank lost: a stream ended without goodbye";
      case HEARTBEAT_LOST -> "a rank's heartbeats stopped (its stream is still open)";
      case WATCHDOG_TIMEOUT -> "a rank reported a watchdog timeout";
      case COMM_ERROR -> "a rank reported a communication error";
      case CUDA_ERROR -> "a rank reported a CUDA error";
      case WATCHDOG_STUCK -> "a rank reported its watchdog stuck";
      case ON_DEMAND -> "diagnosis requested";
      case OFFLINE -> "offline analysis";
      case STRAGGLER -> "a rank arrives late at collectives, consistently";
    };
  }

  static long epochNanos(Instant t) {
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }
}
