package dev.frdiag.daemon.registry;

import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankStatus;
import dev.frdiag.proto.v1.RecordBatch;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * A job's ranks by rank: which stream speaks for each, the groups they announced (one copy of each), and what is
 * read across them. Not thread-safe: the job's lock guards it and every rank's state.
 */
final class Ranks {
  private final String jobId;
  private final int maxGroupsPerRank;
  private final Map<Integer, RankState> byRank = new TreeMap<>();
  private int worldSize;
  /**
   * One copy of each process group the ranks announced: every rank of a 16,384-rank job lists the world group's
   * 16,384 members in its Hello, and a copy per rank would be a gigabyte.
   */
  private final Map<ProcessGroup, ProcessGroup> sharedGroups = new HashMap<>();
  /** What those copies hold, as {@link StateBudget} counts it. */
  private long groupBytes;
  /** The one copy of the strings, shapes and stacks their kept records repeat. */
  private final RecordInterner interner = new RecordInterner();
  /** The job's part of the daemon's state budget: every rank's {@link RankState#bytes} and its groups' copies. */
  private final StateBudget.Share share;

  Ranks(String jobId, int worldSize, int maxGroupsPerRank, StateBudget.Share share) {
    this.jobId = jobId;
    this.worldSize = worldSize;
    this.maxGroupsPerRank = maxGroupsPerRank;
    this.share = share;
  }

  /** See {@link Job#attach}. */
  void attach(RankIdentity identity, List<ProcessGroup> groups, RankLink link, String session, long dropped,
      long nowNanos, long nowMs) {
    if (identity.getWorldSize() != worldSize) {
      long live = byRank.values().stream().filter(RankState::live).count();
      if (live > 0) {
        throw new ClaimRefusedException(ClaimRefusedException.Conflict.SHAPE_IN_USE, "rank "
            + identity.getGlobalRank() + " says world size " + identity.getWorldSize() + " but job " + jobId
            + " has world size " + worldSize + " with " + live + " live ranks; refused while they are connected");
      }
      // No live rank holds the old shape (an elastic restart, or a claim that went away): the old ranks are history.
      share.add(-byRank.values().stream().mapToLong(RankState::bytes).sum());
      byRank.clear();
      worldSize = identity.getWorldSize();
    }
    RankState existing = byRank.get(identity.getGlobalRank());
    if (existing != null && existing.live() && !existing.session().equals(session)) {
      throw new ClaimRefusedException(ClaimRefusedException.Conflict.RANK_IN_USE, "rank "
          + identity.getGlobalRank() + " of job " + jobId + " is already connected (host "
          + existing.identity().getHostname() + ", pid " + existing.identity().getPid()
          + "); a second stream for it is refused while the first is alive");
    }
    checkGroupLimit(existing == null ? 0 : existing.groupCount(), groups, identity.getGlobalRank());
    long rankGrowth = existing == null ? StateBytes.RANK + StateBytes.message(identity)
        : Math.max(0, StateBytes.message(identity) - StateBytes.message(existing.identity()));
    long groupsGrowth = groupsGrowth(existing, groups);
    // One grant for the whole Hello, so that nothing of it is kept when any of it is refused: a new rank's, or the
    // groups' of a rank that was here before.
    share.reserve(existing == null || groupsGrowth == 0 ? StateBudget.State.RANKS : StateBudget.State.GROUPS,
        rankGrowth + groupsGrowth);
    long before = existing == null ? 0 : existing.bytes();
    long groupsBefore = groupBytes;
    RankState r = byRank.computeIfAbsent(identity.getGlobalRank(), k -> new RankState());
    try {
      r.attach(identity, link, session, dropped, nowNanos, nowMs);
      putGroups(r, groups);
    } finally {
      share.add(r.bytes() - before + groupBytes - groupsBefore - rankGrowth - groupsGrowth);
    }
  }

  /**
   * Groups {@code r}, rank {@code rank}, created after its Hello.
   *
   * @throws LimitExceededException when the rank would announce more process groups than the limit, or hold more
   *     bytes than its job's or the daemon's state limit
   */
  void addGroups(RankState r, int rank, List<ProcessGroup> groups) {
    checkGroupLimit(r.groupCount(), groups, rank);
    long growth = groupsGrowth(r, groups);
    share.reserve(StateBudget.State.GROUPS, growth);
    long before = r.bytes();
    long groupsBefore = groupBytes;
    try {
      putGroups(r, groups);
    } finally {
      share.add(r.bytes() - before + groupBytes - groupsBefore - growth);
    }
  }

  /**
   * Runs {@code change} on {@code r} once the bytes it may add ({@code growth}, of {@code state}) are granted; the
   * job's share then follows what {@code r} holds.
   *
   * @throws LimitExceededException when the growth would pass the job's or the daemon's state limit; nothing changed
   */
  void charged(RankState r, StateBudget.State state, long growth, Runnable change) {
    share.reserve(state, growth);
    long before = r.bytes();
    try {
      change.run();
    } finally {
      share.add(r.bytes() - before - growth);
    }
  }

  /** The bytes {@code groups} would add: the job's copy of each it holds no equal of, and the rank's entries. */
  private long groupsGrowth(RankState r, List<ProcessGroup> groups) {
    long growth = 0;
    Set<ProcessGroup> copied = new HashSet<>();
    Set<String> named = new HashSet<>();
    for (ProcessGroup g : groups) {
      if (!sharedGroups.containsKey(g) && copied.add(g)) {
        growth += StateBytes.group(g);
      }
      if ((r == null || !r.knowsGroup(g.getName())) && named.add(g.getName())) {
        growth += StateBytes.GROUP_ENTRY;
      }
    }
    return growth;
  }

  private void checkGroupLimit(int known, List<ProcessGroup> groups, int rank) {
    if (known + groups.size() > maxGroupsPerRank) {
      long added = groups.stream().map(ProcessGroup::getName).distinct().count();
      if (known + added > maxGroupsPerRank) {
        throw new LimitExceededException("rank " + rank + " of job " + jobId + " announced more than "
            + maxGroupsPerRank + " process groups");
      }
    }
  }

  private void putGroups(RankState r, List<ProcessGroup> groups) {
    for (ProcessGroup g : groups) {
      r.putGroup(sharedGroups.computeIfAbsent(g, x -> {
        groupBytes += StateBytes.group(x);
        return x;
      }));
    }
  }

  /**
   * Checks a batch of {@code rank}'s records and its new templates, kept in its stream's {@code templates}, and takes
   * the records into the rank's window of {@code capacity} when {@code session} speaks for it.
   *
   * @return the rank's state when taken in; null for a stale stream
   * @throws IllegalArgumentException describing the batch's first malformed template or record
   */
  RankState records(int rank, String session, RecordBatch batch, TemplateTable templates, int capacity) {
    templates.take(batch.getTemplatesList(), batch.getRecordsList(), announced(rank), interner::shared);
    RankState r = current(rank, session);
    if (r != null) {
      r.dropped(batch.getDroppedRecords());
      charged(r, StateBudget.State.RANKS, r.windowGrowth(batch.getRecordsCount(), capacity)
          + r.framesGrowth(batch.getFramesList(), interner), () -> r.records(batch.getRecordsList(), templates::get,
              batch.getFramesList(), interner, capacity));
    }
    return r;
  }

  /**
   * Checks {@code rank}'s snapshot {@code reply}, and when {@code keep} returns it shared with the kept records
   * ({@link RecordInterner#shared(DumpReply, java.util.function.IntFunction)}); else null.
   *
   * @throws IllegalArgumentException describing the reply's first malformed template or record
   */
  DumpReply snapshot(int rank, DumpReply reply, boolean keep) {
    TemplateTable templates = keep ? new TemplateTable() : TemplateTable.checkOnly();
    templates.take(reply.getTemplatesList(), reply.getRecordsList(), announced(rank), interner::shared);
    return keep ? interner.shared(reply, templates::get) : null;
  }

  /** {@code reply} with only its newest {@code max} records. */
  static DumpReply newest(DumpReply reply, int max) {
    int n = reply.getRecordsCount();
    if (n <= max) {
      return reply;
    }
    return reply.toBuilder().clearRecords().addAllRecords(reply.getRecordsList().subList(n - max, n)).build();
  }

  /** Whether a rank announced a group equal to {@code group} (members, layout, name) and it was kept. */
  boolean holds(ProcessGroup group) {
    return sharedGroups.containsKey(group);
  }

  /**
   * A rank that was connected, as {@code identity} says, when the daemon stopped: expected back.
   *
   * @throws LimitExceededException when the job or the daemon cannot hold one more rank
   */
  void expect(RankIdentity identity) {
    if (byRank.containsKey(identity.getGlobalRank())) {
      return;
    }
    long growth = StateBytes.RANK + StateBytes.message(identity);
    share.reserve(StateBudget.State.RANKS, growth);
    RankState r = new RankState();
    r.awaitReturn(identity);
    byRank.put(identity.getGlobalRank(), r);
    share.add(r.bytes() - growth);
  }

  /** The ranks expected back after a restart that have not come back yet. */
  List<Integer> awaited() {
    List<Integer> out = new ArrayList<>();
    byRank.forEach((rank, r) -> {
      if (r.awaited()) {
        out.add(rank);
      }
    });
    return out;
  }

  /** Whether any rank connected since the daemon started (the ranks expected back are the only others). */
  boolean anyConnectedSinceStart() {
    return byRank.values().stream().anyMatch(r -> !r.awaited() && !r.session().isEmpty());
  }

  /** Every rank still expected back did not come back in its time; see {@link RankState#notBack}. */
  void notBack(boolean ended, long nowNanos) {
    byRank.values().stream().filter(RankState::awaited).forEach(r -> r.notBack(ended, nowNanos));
  }

  /**
   * The ranks connected now, and those still expected back, as they said who they are: what a restarted daemon
   * should expect back. Sorted by rank.
   */
  List<RankIdentity> connected() {
    List<RankIdentity> out = new ArrayList<>();
    byRank.values().forEach(r -> {
      if (r.live() || r.awaited()) {
        out.add(r.identity());
      }
    });
    return out;
  }

  /** A digest of {@link #connected}, cheap to compare from one look to the next. */
  long connectedDigest() {
    long digest = worldSize;
    for (Map.Entry<Integer, RankState> e : byRank.entrySet()) {
      RankState r = e.getValue();
      if (r.live() || r.awaited()) {
        digest = digest * 31 + e.getKey() * 1_000_003L + r.identity().getPid();
      }
    }
    return digest;
  }

  /** The rank's state; null when it never connected. */
  RankState get(int rank) {
    return byRank.get(rank);
  }

  /** The rank's state when {@code session} is the one that speaks for it now, else null (a stale stream). */
  RankState current(int rank, String session) {
    RankState r = byRank.get(rank);
    return r != null && r.session().equals(session) ? r : null;
  }

  /** Whether {@code rank} announced a group of a name, whichever stream speaks for it. */
  Predicate<String> announced(int rank) {
    RankState r = byRank.get(rank);
    return r == null ? name -> false : r::knowsGroup;
  }

  Collection<RankState> all() {
    return byRank.values();
  }

  int worldSize() {
    return worldSize;
  }

  /** See {@link Job#currentWindows}. */
  Set<Integer> currentWindows(long sinceEpochNs) {
    Set<Integer> current = new HashSet<>();
    byRank.forEach((rank, r) -> {
      if (r.windowCurrentSince(sinceEpochNs)) {
        current.add(rank);
      }
    });
    return current;
  }

  /** The links of the connected ranks but those of {@code notAsked}; each rank put in {@code asked} with its session. */
  List<RankLink> links(Set<Integer> notAsked, Map<Integer, String> asked) {
    List<RankLink> links = new ArrayList<>();
    byRank.forEach((rank, r) -> {
      if (r.link() != null && !notAsked.contains(rank)) {
        links.add(r.link());
        asked.put(rank, r.session());
      }
    });
    return links;
  }

  /** See {@link Job#evidence(Map, Set, long, java.time.Duration, String)}. */
  List<RankEvidence> evidence(Map<Integer, DumpReply> replies, Set<Integer> standIns, String noReplyReason) {
    // Built on every core while the job's lock is held (writers wait, and the ranks' states are only read): each
    // rank's records are rebuilt from its window, a million at 16,384 ranks.
    return List.copyOf(byRank.entrySet()).parallelStream()
        .map(e -> e.getValue().evidence(e.getKey(), replies.get(e.getKey()), standIns.contains(e.getKey()),
            noReplyReason))
        .toList();
  }

  /** See {@link Job#prepareEvidence}. */
  int buildWindows() {
    // On every core, as evidence() does, and for the same reason: writers wait while the job's lock is held.
    // Read for what the read keeps: the records built, and the list the incident's read then returns as it is.
    return (int) List.copyOf(byRank.values()).parallelStream().filter(RankState::buildWindow).count();
  }

  /** {@code summary} with the ranks counted by liveness. */
  JobSummary.Builder counted(JobSummary.Builder summary) {
    int connected = 0;
    int lost = 0;
    int finished = 0;
    for (RankState r : byRank.values()) {
      switch (r.liveness()) {
        case ALIVE -> connected++;
        case LOST -> lost++;
        case FINISHED -> finished++;
        default -> { }
      }
    }
    return summary.setWorldSize(worldSize).setRanksConnected(connected).setRanksLost(lost).setRanksFinished(finished);
  }

  List<RankStatus> statuses() {
    List<RankStatus> out = new ArrayList<>(byRank.size());
    byRank.forEach((rank, r) -> out.add(r.status(rank)));
    return out;
  }
}
