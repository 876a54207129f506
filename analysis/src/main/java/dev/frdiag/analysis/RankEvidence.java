package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.ThreadStacks;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Everything known about one rank when a job is analysed, whether it came from a live stream or a dump file.
 *
 * @param rank global rank
 * @param identity who the rank is; a default instance when unknown
 * @param liveness whether its process was there
 * @param answered true when the rank delivered a fresh snapshot (or dump) for this analysis
 * @param missingReason why there is no fresh snapshot, e.g. "no reply within 2 s"; empty when answered
 * @param groups process groups the rank is a member of
 * @param records the rank's ring, oldest first
 * @param progress per group progress (heartbeat or dump status); may be empty
 * @param events timeouts and errors the rank reported
 * @param frames the frames {@code records} refer to by id
 * @param source where the records and counters come from: the rank's own ring (live or dumped), or its log lines
 * @param windowCurrentAtNs for a rank that did not answer: when, by its own clock (epoch ns), every record of its ring
 *     was last known to have reached the daemon, so that what its window lacks was lacking then; 0 when never known
 * @param stacks where its Python threads were while it hung (a stack dump); the default instance when none
 * @param observedAtNs when its evidence was taken, by its host's clock (epoch ns): a dump's write time; 0 when
 *     unknown. A record the evidence lacks was lacking then, and not necessarily later (DIAGNOSIS.md §3, "A consistent
 *     cut")
 */
public record RankEvidence(int rank, RankIdentity identity, Liveness liveness, boolean answered,
    String missingReason, List<ProcessGroup> groups, List<CollectiveRecord> records,
    List<ProcessGroupProgress> progress, List<RankEvent> events, Map<Integer, Frame> frames, Source source,
    long windowCurrentAtNs, ThreadStacks stacks, long observedAtNs) {

  /** Where a rank's evidence comes from, which bounds how sure a verdict resting on it can be. */
  public enum Source {
    /** The rank's Flight Recorder ring, streamed live or read from its dump. */
    RECORDS,
    /** Lines the rank printed (watchdog timeouts and status lines): what it said, not what it recorded. */
    LOG
  }

  /** Evidence from the rank's own ring. */
  public RankEvidence(int rank, RankIdentity identity, Liveness liveness, boolean answered, String missingReason,
      List<ProcessGroup> groups, List<CollectiveRecord> records, List<ProcessGroupProgress> progress,
      List<RankEvent> events, Map<Integer, Frame> frames) {
    this(rank, identity, liveness, answered, missingReason, groups, records, progress, events, frames,
        Source.RECORDS, 0);
  }

  /** Evidence from {@code source}, with no window known current (a dump, log lines, or a rank that answered). */
  public RankEvidence(int rank, RankIdentity identity, Liveness liveness, boolean answered, String missingReason,
      List<ProcessGroup> groups, List<CollectiveRecord> records, List<ProcessGroupProgress> progress,
      List<RankEvent> events, Map<Integer, Frame> frames, Source source) {
    this(rank, identity, liveness, answered, missingReason, groups, records, progress, events, frames, source, 0);
  }

  /** Evidence without stacks. */
  public RankEvidence(int rank, RankIdentity identity, Liveness liveness, boolean answered, String missingReason,
      List<ProcessGroup> groups, List<CollectiveRecord> records, List<ProcessGroupProgress> progress,
      List<RankEvent> events, Map<Integer, Frame> frames, Source source, long windowCurrentAtNs) {
    this(rank, identity, liveness, answered, missingReason, groups, records, progress, events, frames, source,
        windowCurrentAtNs, ThreadStacks.getDefaultInstance());
  }

  /** Evidence whose time of observation is unknown. */
  public RankEvidence(int rank, RankIdentity identity, Liveness liveness, boolean answered, String missingReason,
      List<ProcessGroup> groups, List<CollectiveRecord> records, List<ProcessGroupProgress> progress,
      List<RankEvent> events, Map<Integer, Frame> frames, Source source, long windowCurrentAtNs,
      ThreadStacks stacks) {
    this(rank, identity, liveness, answered, missingReason, groups, records, progress, events, frames, source,
        windowCurrentAtNs, stacks, 0);
  }

  public RankEvidence {
    if (rank < 0) {
      throw new IllegalArgumentException("rank must not be negative, got " + rank);
    }
    Objects.requireNonNull(identity, "identity");
    Objects.requireNonNull(liveness, "liveness");
    Objects.requireNonNull(source, "source");
    stacks = stacks == null ? ThreadStacks.getDefaultInstance() : stacks;
    missingReason = missingReason == null ? "" : missingReason;
    groups = List.copyOf(groups);
    records = List.copyOf(records);
    progress = List.copyOf(progress);
    events = List.copyOf(events);
    frames = Map.copyOf(frames);
  }

  /** This evidence with {@code stacks} as where its Python threads were. */
  public RankEvidence withStacks(ThreadStacks stacks) {
    return new RankEvidence(rank, identity, liveness, answered, missingReason, groups, records, progress, events,
        frames, source, windowCurrentAtNs, Objects.requireNonNull(stacks, "stacks"), observedAtNs);
  }

  /** This evidence with {@code more} events after its own. */
  public RankEvidence withEvents(List<RankEvent> more) {
    List<RankEvent> all = new java.util.ArrayList<>(events);
    all.addAll(more);
    return new RankEvidence(rank, identity, liveness, answered, missingReason, groups, records, progress, all,
        frames, source, windowCurrentAtNs, stacks, observedAtNs);
  }

  /** This evidence as taken at {@code epochNs} ({@link #observedAtNs}). */
  public RankEvidence withObservedAt(long epochNs) {
    return new RankEvidence(rank, identity, liveness, answered, missingReason, groups, records, progress, events,
        frames, source, windowCurrentAtNs, stacks, epochNs);
  }

  /** Whether a stack dump of the rank was read: threads, not an error answer. */
  public boolean hasStacks() {
    return stacks.getThreadsCount() > 0;
  }

  /** Host name, or "?" when unknown. */
  public String host() {
    return identity.getHostname().isEmpty() ? "?" : identity.getHostname();
  }

  /** True when nothing at all is known of the rank's collectives. */
  public boolean isEmpty() {
    return records.isEmpty() && progress.isEmpty();
  }
}
