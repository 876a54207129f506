package dev.frdiag.daemon.watchdog;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportSink;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one investigation: asks every rank of a job for a fresh snapshot, waits until all answered or the
 * deadline passed (a rank that did not answer is evidence, not an error), analyses, stores the report and
 * hands it to the sinks.
 */
public final class Investigator {
  private static final Logger log = LoggerFactory.getLogger(Investigator.class);

  private final ReportStore store;
  private final Executor executor;
  private final Supplier<Instant> clock;
  private final LongSupplier nanoTime;
  private final Duration stallThreshold;
  private final AtomicLong requestIds = new AtomicLong();
  // Concurrent rather than locked: replies arrive on many rank streams at once and must not queue behind each other.
  private final Map<Long, Gather> pending = new ConcurrentHashMap<>();
  // Watchers come and go rarely; every report walks the list, from the analysis threads.
  private final List<ReportSink> sinks = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService scheduler;

  /** How often an open gather looks whether it has a quorum. */
  static final Duration QUORUM_CHECK = Duration.ofMillis(50);
  /** How long replies must have stopped before a quorum is taken as final. */
  static final Duration QUORUM_QUIET = Duration.ofMillis(300);

  public Investigator(ReportStore store, Executor executor, ScheduledExecutorService scheduler,
      Supplier<Instant> clock, LongSupplier nanoTime, Duration stallThreshold) {
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

  /** Routes a rank's dump reply to the investigation that asked for it; late or unknown replies are dropped. */
  public void onDumpReply(String jobId, int rank, DumpReply reply) {
    Gather g = pending.get(reply.getRequestId());
    if (g != null && g.jobId.equals(jobId)) {
      g.add(rank, reply);
    }
  }

  /** Investigates {@code job} now; the future completes with the stored report. */
  public CompletableFuture<Report> investigate(Job job, Report.Trigger trigger, Duration deadline) {
    List<Report.TimelineEntry> timeline = new ArrayList<>();
    Instant start = clock.get();
    timeline.add(new Report.TimelineEntry(start.toString(), describe(trigger)));
    long id = requestIds.incrementAndGet();
    Gather gather = new Gather(job.id(), nanoTime);
    pending.put(id, gather);
    List<Integer> asked = job.requestDumps(DumpRequest.newBuilder().setRequestId(id)
        .setReason("frdiag: " + describe(trigger)).setDeadlineMs(deadline.toMillis()).build());
    timeline.add(new Report.TimelineEntry(start.toString(), "snapshots requested from " + asked.size()
        + " connected ranks (deadline " + deadline.toMillis() + " ms)"));
    gather.expect(asked);
    // Stragglers: once nearly every rank answered and the replies stopped coming, waiting out the deadline for the
    // last few only delays the answer; their stored windows stand in for them and the report says so.
    ScheduledFuture<?> quorum = scheduler.scheduleWithFixedDelay(gather::checkQuorum, QUORUM_CHECK.toMillis(),
        QUORUM_CHECK.toMillis(), TimeUnit.MILLISECONDS);
    gather.done.whenComplete((v, e) -> quorum.cancel(false));
    return gather.done.completeOnTimeout(null, deadline.toMillis(), TimeUnit.MILLISECONDS)
        .thenApplyAsync(ignored -> {
          pending.remove(id);
          Map<Integer, DumpReply> replies = gather.snapshot();
          Instant gathered = clock.get();
          timeline.add(new Report.TimelineEntry(gathered.toString(), replies.size() + " of " + asked.size()
              + " snapshots received after " + Duration.between(start, gathered).toMillis() + " ms"));
          JobEvidence evidence = job.evidence(replies, epochNanos(gathered), stallThreshold,
              "no snapshot within " + deadline.toMillis() + " ms");
          Diagnosis diagnosis = HangAnalyzer.analyze(evidence);
          if (diagnosis.stuckSinceNs() > 0 && diagnosis.collective() != null) {
            Instant since = Instant.ofEpochSecond(0, diagnosis.stuckSinceNs());
            // Comes first: the hang began before anyone noticed it.
            timeline.add(0, new Report.TimelineEntry(since.toString(), "first divergence: "
                + diagnosis.collective().label() + " issued by its first member; it never completed"));
          }
          Instant now = clock.get();
          timeline.add(new Report.TimelineEntry(now.toString(), "analysed " + evidence.ranks().size()
              + " ranks in " + Duration.between(gathered, now).toMillis() + " ms; report written"));
          Report report = Report.of(store.nextReportId(job.id()), job.id(), trigger, now,
              diagnosis, timeline, job.scheduler());
          store.save(report);
          job.reportWritten(report.reportId());
          log.info("report {} job={} verdict={} symptom={} culprits={} trigger={}", report.reportId(), job.id(),
              report.verdict(), report.symptom(), report.culpritRanks(), trigger);
          for (ReportSink sink : sinks) {
            try {
              sink.accept(report);
            } catch (RuntimeException e) {
              log.warn("report sink failed for {}: {}", report.reportId(), e.toString());
            }
          }
          return report;
        }, executor);
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
    };
  }

  static long epochNanos(Instant t) {
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }

  /** Replies gathered for one request. */
  private static final class Gather {
    final String jobId;
    private final LongSupplier nanoTime;
    final CompletableFuture<Void> done = new CompletableFuture<>();
    @GuardedBy("this")
    private final Map<Integer, DumpReply> replies = new HashMap<>();
    @GuardedBy("this")
    private final Set<Integer> expected = new HashSet<>();
    @GuardedBy("this")
    private boolean expectedKnown;
    @GuardedBy("this")
    private long lastReplyNanos;

    Gather(String jobId, LongSupplier nanoTime) {
      this.jobId = jobId;
      this.nanoTime = nanoTime;
    }

    synchronized void expect(List<Integer> ranks) {
      expected.addAll(ranks);
      expectedKnown = true;
      checkDone();
    }

    synchronized void add(int rank, DumpReply reply) {
      replies.put(rank, reply);
      lastReplyNanos = nanoTime.getAsLong();
      checkDone();
    }

    /**
     * Done early when at most 1 % of the ranks are missing and no reply came for a while. Below 100 ranks that is
     * none: a small job waits for every answer (or the deadline), since one rank is a large part of its evidence.
     */
    synchronized void checkQuorum() {
      int missing = expected.size() - replies.size();
      int allowed = expected.size() / 100;
      if (expectedKnown && replies.size() > 0 && missing <= allowed
          && nanoTime.getAsLong() - lastReplyNanos >= QUORUM_QUIET.toNanos()) {
        done.complete(null);
      }
    }

    @GuardedBy("this")
    private void checkDone() {
      if (expectedKnown && replies.keySet().containsAll(expected)) {
        done.complete(null);
      }
    }

    synchronized Map<Integer, DumpReply> snapshot() {
      return Map.copyOf(replies);
    }
  }
}
