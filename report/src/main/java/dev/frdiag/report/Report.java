package dev.frdiag.report;

import dev.frdiag.analysis.CollectiveRef;
import dev.frdiag.analysis.Culprit;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.FabricMap;
import dev.frdiag.analysis.GroupProgress;
import dev.frdiag.analysis.Lateness;
import dev.frdiag.analysis.StuckCollective;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.analysis.Ranks;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A postmortem report, schema {@value #SCHEMA}: a diagnosis plus when and why it was made.
 *
 * <p>Its JSON form ({@link ReportJson}) is a public contract: fields are only ever added.
 *
 * @param schema always {@value #SCHEMA}
 * @param reportId unique and stable, e.g. "job42-000003"; empty for offline reports
 * @param job the job id
 * @param createdAt when it was made; written as ISO-8601 ({@link #time})
 * @param trigger what started the analysis
 * @param timeline what happened when, oldest first
 * @param scheduler where the job ran as its scheduler and launcher name it ("slurm.job_id", "kubernetes.pod",
 *     "torchelastic.restart_count"…), keys sorted; empty when unknown (offline reports, older reports)
 * @param groupProgress where each member of the stuck groups stands around the stuck seq; empty in reports of
 *     no hang and in reports written before it was added
 * @param fabric for a network verdict ({@code NODE_NETWORK}, {@code FABRIC}), the hosts, GPUs, NICs and ports
 *     involved with the findings on each; null (left out of the JSON) otherwise
 * @param lateness for a straggler analysis, how late each rank arrived at the window's collectives; null (left out
 *     of the JSON) otherwise
 * @param recoveredAt for a hang that ended by itself (the job moved again with no one's help), when the daemon saw
 *     it move; null (left out of the JSON) otherwise ({@link #recovered})
 */
// What ReportJson leaves out of the document (empty scheduler and group progress, null fabric and lateness) reads
// back as it was written; "exclude" is derived, written for readers and never read back into the record.
public record Report(String schema, String reportId, String job, Verdict verdict, Symptom symptom,
    String headline, List<Integer> culpritRanks, List<String> culpritHosts, CollectiveRef collective,
    double confidence, List<Evidence> evidence, Instant createdAt, Trigger trigger, List<TimelineEntry> timeline,
    List<Culprit> culprits, List<StuckCollective> stuckCollectives, List<Diagnosis.RankGroup> rankStates,
    String recommendation,
    Map<String, String> scheduler, List<GroupProgress> groupProgress, FabricMap fabric, Lateness lateness,
    Instant recoveredAt) {

  public static final String SCHEMA = "frdiag.report/v1";

  /**
   * The hosts a restart of the job should leave out (Slurm {@code --exclude}, Kubernetes node names): the culprits'
   * hosts when what went wrong sits on them (a GPU, a process, a node's network); empty for a program bug, a
   * fabric-wide fault or a stall whose cause may be the program, since another host would not help there; empty too
   * once the hang ended by itself.
   */
  public List<String> exclude() {
    boolean onTheHost = verdict == Verdict.HANG && recoveredAt == null && (symptom == Symptom.GPU_STALL
        || symptom == Symptom.DEAD_RANK || symptom == Symptom.NODE_NETWORK);
    return onTheHost ? culpritHosts : List.of();
  }

  public Report {
    Objects.requireNonNull(verdict, "verdict");
    Objects.requireNonNull(symptom, "symptom");
    Objects.requireNonNull(createdAt, "createdAt");
    Objects.requireNonNull(trigger, "trigger");
    culpritRanks = culpritRanks == null ? List.of() : List.copyOf(culpritRanks);
    culpritHosts = culpritHosts == null ? List.of() : List.copyOf(culpritHosts);
    evidence = evidence == null ? List.of() : List.copyOf(evidence);
    timeline = timeline == null ? List.of() : List.copyOf(timeline);
    culprits = culprits == null ? List.of() : List.copyOf(culprits);
    stuckCollectives = stuckCollectives == null ? List.of() : List.copyOf(stuckCollectives);
    rankStates = rankStates == null ? List.of() : List.copyOf(rankStates);
    // Sorted, so the JSON and the text list the keys in one order.
    scheduler = scheduler == null ? Map.of() : Collections.unmodifiableMap(new TreeMap<>(scheduler));
    groupProgress = groupProgress == null ? List.of() : List.copyOf(groupProgress);
  }

  /**
   * This report of a hang, ended by itself at {@code at}: the job moved again with no one's help, so what the report
   * names slowed the job rather than hung it (DIAGNOSIS.md §3, "A stall that ends by itself"). Its headline and
   * recommendation say so and offer nothing to drain or exclude; its timeline ends with the recovery and how long
   * the job stood still, counted from the first divergence when the report knows it, else from the report.
   */
  public Report recovered(Instant at) {
    Instant since = timeline.stream().filter(t -> t.event().startsWith(ReportDraft.FIRST_DIVERGENCE))
        .map(TimelineEntry::at).findFirst().orElse(createdAt);
    String stalled = String.format(java.util.Locale.ROOT, "%.1f s", Duration.between(since, at).toMillis() / 1000.0);
    List<TimelineEntry> after = new ArrayList<>(timeline);
    after.add(new TimelineEntry(at, "recovered: every group that had stalled advanced again; the job stood still "
        + stalled));
    String who = culpritRanks.isEmpty() ? "the ranks" : culpritRanks.size() == 1 ? "rank " + culpritRanks.get(0)
        : "ranks " + Ranks.compact(culpritRanks);
    return new Report(schema, reportId, job, verdict, symptom, "Recovered by itself after standing still " + stalled
        + ". " + headline, culpritRanks, culpritHosts, collective, confidence, evidence, createdAt, trigger, after,
        culprits, stuckCollectives, rankStates, "Nothing to drain or exclude: the job moved again by itself, a "
        + "slowdown rather than a hang. If it recurs, look at what " + who + " did meanwhile (a checkpoint save, a "
        + "data loader, a long host-side step): the stacks and records above are from the stall.", scheduler,
        groupProgress, fabric, lateness, at);
  }

  /** ISO-8601 in UTC with as many fraction digits as the instant needs: 09:26:53.5Z, 09:26:53.589793Z. */
  private static final DateTimeFormatter TIME = new DateTimeFormatterBuilder().appendInstant(-1).toFormatter();

  /**
   * {@code instant} as a report writes it, its creation and its timeline alike: ISO-8601 in UTC, with as many
   * fraction digits as it needs, so that a timeline entry made at the report's creation reads the same.
   */
  public static String time(Instant instant) {
    return TIME.format(instant);
  }

  /** One moment in an incident. */
  public record TimelineEntry(Instant at, String event) {
    public TimelineEntry {
      Objects.requireNonNull(at, "at");
      Objects.requireNonNull(event, "event");
    }

    /** When it happened, as every format writes it ({@link Report#time}). */
    public String time() {
      return Report.time(at);
    }
  }

  /** What started an analysis, written in reports as its {@linkplain #wire() wire name}. */
  public enum Trigger {
    /** A process group with outstanding work stopped making progress. */
    STALL("stall"),
    /** A rank's stream ended without a goodbye. */
    RANK_LOST("rank_lost"),
    /** A rank's heartbeats stopped while its stream stayed open. */
    HEARTBEAT_LOST("heartbeat_lost"),
    /** A rank reported a watchdog timeout. */
    WATCHDOG_TIMEOUT("watchdog_timeout"),
    /** A rank reported a communication error. */
    COMM_ERROR("comm_error"),
    /** A rank reported a CUDA error. */
    CUDA_ERROR("cuda_error"),
    /** A rank reported its watchdog stuck. */
    WATCHDOG_STUCK("watchdog_stuck"),
    /** Someone asked for a diagnosis. */
    ON_DEMAND("on_demand"),
    /** Dumps and logs analysed after the fact. */
    OFFLINE("offline"),
    /** Some rank arrives late at collectives, consistently: the job is slowed, not hung. */
    STRAGGLER("straggler");

    private final String wire;

    Trigger(String wire) {
      this.wire = wire;
    }

    /** The name reports use, e.g. "watchdog_timeout". */
    public String wire() {
      return wire;
    }

    /**
     * The trigger whose {@linkplain #wire() wire name} is {@code name}.
     *
     * @throws IllegalArgumentException naming the value when no trigger has that name
     */
    public static Trigger fromWire(String name) {
      for (Trigger t : values()) {
        if (t.wire.equals(name)) {
          return t;
        }
      }
      throw new IllegalArgumentException("unknown trigger '" + name + "'");
    }
  }

  /** Wraps a diagnosis into a report, with no scheduler names. */
  public static Report of(String reportId, String job, Trigger trigger, Instant createdAt, Diagnosis d,
      List<TimelineEntry> timeline) {
    return of(reportId, job, trigger, createdAt, d, timeline, Map.of());
  }

  /** Wraps a diagnosis into a report of a job its scheduler names {@code scheduler}. */
  public static Report of(String reportId, String job, Trigger trigger, Instant createdAt, Diagnosis d,
      List<TimelineEntry> timeline, Map<String, String> scheduler) {
    return new Report(SCHEMA, reportId, job, d.verdict(), d.symptom(), d.headline(), d.culpritRanks(),
        d.culpritHosts(), d.collective(), d.confidence(), d.evidence(), createdAt, trigger, timeline,
        d.culprits(), d.stuck(), d.rankStates(), d.recommendation(), scheduler, d.progress(), d.fabric(),
        d.lateness(), null);
  }
}
