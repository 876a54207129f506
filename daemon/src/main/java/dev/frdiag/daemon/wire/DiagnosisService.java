package dev.frdiag.daemon.wire;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.daemon.access.Access;
import dev.frdiag.daemon.access.Principal;
import dev.frdiag.daemon.fleet.Fleet;
import dev.frdiag.daemon.fleet.Standing;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.registry.LimitExceededException;
import dev.frdiag.daemon.registry.StateBudget;
import dev.frdiag.daemon.store.ReportNotStoredException;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.daemon.store.ReportUnreadableException;
import dev.frdiag.daemon.store.StoredReport;
import dev.frdiag.daemon.watchdog.Investigator;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetJobStatusRequest;
import dev.frdiag.proto.v1.GetReportRequest;
import dev.frdiag.proto.v1.JobStatus;
import dev.frdiag.proto.v1.ListJobsRequest;
import dev.frdiag.proto.v1.ListJobsResponse;
import dev.frdiag.proto.v1.ListPartsRequest;
import dev.frdiag.proto.v1.ListPartsResponse;
import dev.frdiag.proto.v1.PartIncident;
import dev.frdiag.proto.v1.PartKind;
import dev.frdiag.proto.v1.PartStanding;
import dev.frdiag.proto.v1.SymptomCount;
import dev.frdiag.proto.v1.ListReportsRequest;
import dev.frdiag.proto.v1.ListReportsResponse;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.ReportSummary;
import dev.frdiag.proto.v1.WatchIncidentsRequest;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.ReportSink;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The Diagnosis service: what users and tools ask. A thin adapter over the registry, store and investigator. */
public final class DiagnosisService extends DiagnosisGrpc.DiagnosisImplBase {
  private static final Logger log = LoggerFactory.getLogger(DiagnosisService.class);
  /** Parts {@code ListParts} answers with when the request sets no limit. */
  static final int DEFAULT_PARTS = 1000;
  private final JobRegistry registry;
  private final ReportStore store;
  private final Investigator investigator;
  private final Duration defaultDeadline;
  private final Limits limits;
  private final AtomicInteger watchers = new AtomicInteger();
  /** Null when the daemon keeps no fleet memory: {@code ListParts} is then unimplemented. */
  private final Fleet fleet;
  /** The wire form of the newest reports, shared by every watcher that queues them. */
  @GuardedBy("recentEnvelopes")
  private final java.util.Map<String, ReportEnvelope> recentEnvelopes = new java.util.LinkedHashMap<>() {
    @Override
    protected boolean removeEldestEntry(java.util.Map.Entry<String, ReportEnvelope> eldest) {
      return size() > RECENT_ENVELOPES;
    }
  };
  /** Reports whose wire form is kept to share: the two analysis threads announce one at a time each. */
  private static final int RECENT_ENVELOPES = 4;

  public DiagnosisService(JobRegistry registry, ReportStore store, Investigator investigator,
      Duration defaultDeadline, Limits limits) {
    this(registry, store, investigator, defaultDeadline, limits, null);
  }

  /** A service that also answers {@code ListParts} from {@code fleet}. */
  public DiagnosisService(JobRegistry registry, ReportStore store, Investigator investigator,
      Duration defaultDeadline, Limits limits, Fleet fleet) {
    this.fleet = fleet;
    this.registry = registry;
    this.store = store;
    this.investigator = investigator;
    this.defaultDeadline = defaultDeadline;
    this.limits = limits;
  }

  /** The wire form of a stored report. */
  public static ReportEnvelope envelope(Report r) {
    return ReportEnvelope.newBuilder().setSummary(summary(StoredReport.of(r))).setReportJson(ReportJson.write(r))
        .build();
  }

  /** The wire form of a stored report's summary. */
  static ReportSummary summary(StoredReport r) {
    return ReportSummary.newBuilder().setReportId(r.reportId()).setJobId(r.job()).setVerdict(r.verdict())
        .setSymptom(r.symptom()).addAllCulpritRanks(r.culpritRanks()).setCreatedAtMs(r.createdAt().toEpochMilli())
        .setHeadline(r.headline()).build();
  }

  @Override
  public void listJobs(ListJobsRequest request, StreamObserver<ListJobsResponse> out) {
    ListJobsResponse.Builder b = ListJobsResponse.newBuilder();
    Principal caller = Access.caller();
    registry.all().stream().filter(j -> caller.mayRead(j.id())).sorted(Comparator.comparing(Job::id))
        .forEach(j -> b.addJobs(j.summary()));
    out.onNext(b.build());
    out.onCompleted();
  }

  @Override
  public void getJobStatus(GetJobStatusRequest request, StreamObserver<JobStatus> out) {
    if (!allowed(() -> Access.requireReader(request.getJobId()), out)) {
      return;
    }
    Job job = registry.find(request.getJobId()).orElse(null);
    if (job == null) {
      out.onError(unknownJob(request.getJobId()));
      return;
    }
    JobStatus.Builder b = JobStatus.newBuilder().setSummary(job.summary());
    if (request.getIncludeRanks()) {
      b.addAllRanks(job.rankStatuses());
    }
    out.onNext(b.build());
    out.onCompleted();
  }

  @Override
  public void diagnoseNow(DiagnoseNowRequest request, StreamObserver<ReportEnvelope> out) {
    if (!allowed(() -> Access.requireOperator(request.getJobId()), out)) {
      return;
    }
    Job job = registry.find(request.getJobId()).orElse(null);
    if (job == null) {
      out.onError(unknownJob(request.getJobId()));
      return;
    }
    Duration deadline = request.getSnapshotDeadlineMs() > 0 ? Duration.ofMillis(request.getSnapshotDeadlineMs())
        : defaultDeadline;
    CompletableFuture<Report> diagnosis;
    try {
      diagnosis = investigator.investigateOnDemand(job, deadline);
    } catch (LimitExceededException e) {
      out.onError(Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    diagnosis.whenComplete((report, error) -> {
      if (error != null) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        // Refused once it could start (after waiting for ranks to come back), or the disk refusing it: the same
        // answer as a refusal at once.
        out.onError((cause instanceof ReportNotStoredException || cause instanceof LimitExceededException
            ? Status.RESOURCE_EXHAUSTED.withDescription(cause.getMessage())
            : Status.INTERNAL.withDescription("diagnosis failed: " + cause)).asRuntimeException());
      } else {
        out.onNext(envelope(report));
        out.onCompleted();
      }
    });
  }

  @Override
  public void listReports(ListReportsRequest request, StreamObserver<ListReportsResponse> out) {
    if (!allowed(() -> Access.requireReader(request.getJobId()), out)) {
      return;
    }
    if (registry.find(request.getJobId()).isEmpty() && store.list(request.getJobId()).isEmpty()) {
      out.onError(unknownJob(request.getJobId()));
      return;
    }
    ListReportsResponse.Builder b = ListReportsResponse.newBuilder();
    for (StoredReport r : store.list(request.getJobId())) {
      b.addReports(summary(r));
    }
    out.onNext(b.build());
    out.onCompleted();
  }

  @Override
  public void getReport(GetReportRequest request, StreamObserver<ReportEnvelope> out) {
    StoredReport found = store.find(request.getReportId()).filter(s -> Access.caller().mayRead(s.job()))
        .orElse(null);
    if (found == null) {
      // The same answer whether the report does not exist or is another job's: ids are not to be probed.
      out.onError(Status.NOT_FOUND.withDescription("no report '" + MessageValidator.abbreviate(
          request.getReportId()) + "'").asRuntimeException());
      return;
    }
    Report r;
    try {
      r = store.read(found);
    } catch (ReportUnreadableException e) {
      log.warn("{}", e.getMessage());
      out.onError(Status.DATA_LOSS.withDescription("report " + found.reportId() + " is stored, but its file can no "
          + "longer be read; the daemon's log says why").asRuntimeException());
      return;
    }
    out.onNext(envelope(r));
    out.onCompleted();
  }

  @Override
  public void listParts(ListPartsRequest request, StreamObserver<ListPartsResponse> out) {
    if (fleet == null) {
      super.listParts(request, out);
      return;
    }
    if (request.getSinceMs() < 0 || request.getMinIncidents() < 0 || request.getLimit() < 0) {
      out.onError(Status.INVALID_ARGUMENT.withDescription("since_ms, min_incidents and limit must not be negative")
          .asRuntimeException());
      return;
    }
    Principal caller = Access.caller();
    // A reader of some jobs sees the incidents of those jobs only, and the scores they alone give.
    // Job ids never are "*", so only a reader of every job may read it.
    List<Standing> all = fleet.standings(caller::mayRead, caller.mayRead("*"),
        request.getSinceMs() == 0 ? null : Instant.ofEpochMilli(request.getSinceMs()), request.getMinIncidents());
    int limit = request.getLimit() == 0 ? DEFAULT_PARTS : request.getLimit();
    ListPartsResponse.Builder b = ListPartsResponse.newBuilder().setTotal(all.size())
        .setHalfLifeMs(fleet.settings().halfLife().toMillis()).setAlertScore(fleet.settings().alertScore());
    all.stream().limit(limit).forEach(s -> b.addParts(standing(s)));
    b.setAsOfMs(all.isEmpty() ? System.currentTimeMillis() : all.get(0).asOf().toEpochMilli());
    out.onNext(b.build());
    out.onCompleted();
  }

  /** The wire form of a part's standing. */
  static PartStanding standing(Standing s) {
    PartStanding.Builder b = PartStanding.newBuilder().setKind(PartKind.valueOf("PART_" + s.part().kind().name()))
        .setHost(s.part().host()).setPart(s.part().name()).setScore(s.score()).setJobs(s.jobs())
        .setIncidents(s.incidents()).setAsCulprit(s.asCulprit()).setFirstMs(s.first().toEpochMilli())
        .setLastMs(s.last().toEpochMilli()).setAlerting(s.alerting()).setSummary(s.summary()).setDrain(s.drain());
    s.symptomsMostFirst().forEach(e -> b.addSymptoms(SymptomCount.newBuilder().setSymptom(e.getKey()).setIncidents(e.getValue())));
    for (Standing.Incident i : s.recent()) {
      b.addRecent(PartIncident.newBuilder().setReportId(i.reportId()).setJobId(i.job())
          .setAtMs(i.at().toEpochMilli()).setSymptom(i.symptom()).setCulprit(i.culprit()));
    }
    return b.build();
  }

  /** Runs an access check; a refusal ends the call with its status and is false. */
  private static boolean allowed(Runnable check, StreamObserver<?> out) {
    try {
      check.run();
      return true;
    } catch (StatusRuntimeException e) {
      out.onError(e);
      return false;
    }
  }

  @Override
  public void watchIncidents(WatchIncidentsRequest request, StreamObserver<ReportEnvelope> responses) {
    ServerCallStreamObserver<ReportEnvelope> out = (ServerCallStreamObserver<ReportEnvelope>) responses;
    if (!request.getJobId().isEmpty() && !allowed(() -> Access.requireReader(request.getJobId()), out)) {
      return;
    }
    if (watchers.incrementAndGet() > limits.maxWatchers()) {
      watchers.decrementAndGet();
      registry.budget().countRefusal(StateBudget.State.WATCHERS, StateBudget.Scope.DAEMON);
      out.onError(Status.RESOURCE_EXHAUSTED.withDescription("the daemon already serves " + limits.maxWatchers()
          + " incident watchers, its limit").asRuntimeException());
      return;
    }
    Watcher watcher = new Watcher(out, request.getJobId(), Access.caller());
    out.setOnReadyHandler(watcher::drain);
    out.setOnCancelHandler(watcher::end);
    investigator.addSink(watcher);
  }

  /**
   * The wire form of {@code report}, made once however many watchers queue it: each watcher's own copy of the same
   * reports was what their backlogs held.
   */
  private ReportEnvelope sharedEnvelope(Report report) {
    synchronized (recentEnvelopes) {
      return recentEnvelopes.computeIfAbsent(report.reportId(), id -> envelope(report));
    }
  }

  /**
   * One {@code WatchIncidents} subscriber. Reports wait in a small queue until the transport is ready for them, so
   * a watcher that stops reading costs a bounded amount of memory, in reports and in bytes; one that falls further
   * behind is cut off. Every watcher queues the same reports, shared, so all of them together hold no more than the
   * newest reports one watcher may queue.
   */
  private final class Watcher implements ReportSink {
    private final ServerCallStreamObserver<ReportEnvelope> out;
    private final String job;
    private final Principal caller;
    @GuardedBy("this")
    private final ArrayDeque<ReportEnvelope> backlog = new ArrayDeque<>();
    @GuardedBy("this")
    private long backlogBytes;
    @GuardedBy("this")
    private boolean ended;

    Watcher(ServerCallStreamObserver<ReportEnvelope> out, String job, Principal caller) {
      this.out = out;
      this.job = job;
      this.caller = caller;
    }

    @Override
    public void accept(Report report) {
      // A watcher of every job sees the reports of the jobs its caller may read, no others.
      if (!job.isEmpty() && !job.equals(report.job()) || !caller.mayRead(report.job())) {
        return;
      }
      synchronized (this) {
        if (ended) {
          return;
        }
        ReportEnvelope envelope = sharedEnvelope(report);
        long bytes = envelope.getSerializedSize();
        if (backlog.size() >= limits.watcherBacklog() || backlogBytes + bytes > limits.watcherBacklogBytes()) {
          int behind = backlog.size();
          long behindBytes = backlogBytes;
          end();
          registry.budget().countRefusal(StateBudget.State.WATCHERS, StateBudget.Scope.WATCHER);
          try {
            out.onError(Status.RESOURCE_EXHAUSTED.withDescription("this watcher fell " + behind + " reports behind ("
                + behindBytes + " bytes) and was cut off; reconnect and read faster").asRuntimeException());
          } catch (RuntimeException ignored) {
            // Already cancelled by the peer.
          }
          return;
        }
        backlog.add(envelope);
        backlogBytes += bytes;
      }
      drain();
    }

    synchronized void drain() {
      try {
        while (!ended && !backlog.isEmpty() && out.isReady() && !out.isCancelled()) {
          ReportEnvelope next = backlog.poll();
          backlogBytes -= next.getSerializedSize();
          out.onNext(next);
        }
      } catch (RuntimeException e) {
        // The call ended under us.
        end();
      }
    }

    synchronized void end() {
      if (!ended) {
        ended = true;
        backlog.clear();
        backlogBytes = 0;
        investigator.removeSink(this);
        watchers.decrementAndGet();
      }
    }
  }

  private static RuntimeException unknownJob(String jobId) {
    return Status.NOT_FOUND.withDescription("unknown job '" + MessageValidator.abbreviate(jobId) + "'")
        .asRuntimeException();
  }
}
