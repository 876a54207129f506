package dev.frdiag.cli.analyze;

import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.Liveness;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.readers.pytorch.PgStatus;
import dev.frdiag.readers.pytorch.WatchdogLine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Turns what a user has after a hang (Flight Recorder dumps, watchdog lines from training logs) into the evidence
 * the daemon's analysis reads, so offline and live diagnoses come from one engine.
 */
public final class OfflineEvidence {
  private final List<String> unread = new ArrayList<>();
  private final Map<Integer, FlightRecorderDump> dumps = new TreeMap<>();
  private final Map<Integer, String> unreadable = new TreeMap<>();
  private final Map<Integer, List<WatchdogLine>> watchdog = new TreeMap<>();
  private final List<NodeContext> context = new ArrayList<>();
  private int worldSize;

  /** Adds one rank's dump. */
  public OfflineEvidence add(FlightRecorderDump dump) {
    List<CollectiveRecord> kept = withoutCutOp(dump.records());
    dumps.put(dump.rank(), kept == dump.records() ? dump : new FlightRecorderDump(dump.file(), dump.rank(),
        dump.version(), dump.commLibVersion(), dump.processGroups(), kept, dump.progress(), dump.frames(),
        dump.warnings()));
    return this;
  }

  /** Records that rank {@code rank}'s dump exists but could not be read, and why. */
  public OfflineEvidence unreadable(int rank, String why) {
    unreadable.put(rank, why);
    return this;
  }

  /** Adds watchdog lines from training logs. */
  public OfflineEvidence add(List<WatchdogLine> lines) {
    for (WatchdogLine l : lines) {
      if (l.rank() >= 0) {
        watchdog.computeIfAbsent(l.rank(), r -> new ArrayList<>()).add(l);
      }
    }
    return this;
  }

  /**
   * Records an input that gave nothing (skipped, unreadable, no line this reader knows). Evidence that is only
   * node context then says so, since a log whose failure went unread must not leave the others looking healthy.
   */
  public OfflineEvidence unread(String what) {
    unread.add(what);
    return this;
  }

  /** Adds what a node's NCCL log or counters say. */
  public OfflineEvidence add(NodeContext node) {
    context.add(node);
    return this;
  }

  /** The job's world size when known (it is otherwise inferred from the group memberships seen). */
  public OfflineEvidence worldSize(int worldSize) {
    this.worldSize = worldSize;
    return this;
  }

  /**
   * True when nothing readable was added. Files that could not be read say nothing about where the job is: with
   * only those, every rank would look idle and the job healthy.
   */
  public boolean isEmpty() {
    return dumps.isEmpty() && watchdog.isEmpty() && context.isEmpty();
  }

  /** The analysis input: offline, so every outstanding op counts as stuck. */
  public JobEvidence build(String job) {
    int world = Math.max(worldSize, inferredWorldSize());
    Map<String, long[]> seqRanges = PgStatus.seqRanges(dumps.values());
    Map<Integer, RankEvidence> ranks = new TreeMap<>();
    for (FlightRecorderDump d : dumps.values()) {
      ranks.put(d.rank(), fromDump(d, seqRanges, world));
    }
    if (dumps.isEmpty()) {
      ranks.putAll(fromWatchdogLines(world));
    } else {
      watchdog.forEach((rank, lines) -> {
        RankEvidence e = ranks.get(rank);
        if (e != null) {
          List<RankEvent> events = new ArrayList<>(e.events());
          lines.stream().map(OfflineEvidence::events).forEach(events::addAll);
          ranks.put(rank, new RankEvidence(rank, e.identity(), e.liveness(), e.answered(), e.missingReason(),
              e.groups(), e.records(), e.progress(), events, e.frames()));
        }
      });
    }
    for (Map.Entry<Integer, String> u : unreadable.entrySet()) {
      ranks.putIfAbsent(u.getKey(), new RankEvidence(u.getKey(), identity(u.getKey(), world), Liveness.UNKNOWN,
          false, u.getValue(), List.of(), List.of(), List.of(), List.of(), Map.of()));
    }
    List<NodeContext> nodes = new ArrayList<>(context);
    if (ranks.isEmpty() && !unread.isEmpty()) {
      NodeContext.Builder n = NodeContext.newBuilder().setJobId(job);
      unread.forEach(u -> n.addFindings(ContextFinding.newBuilder().setKind(ContextFinding.Kind.NOTE).setRank(-1)
          .setDevice(-1).setDetail("not read: " + u)));
      nodes.add(n.build());
    }
    return new JobEvidence(job, Math.max(world, 1), List.copyOf(ranks.values()), 0, Duration.ofSeconds(1), nodes);
  }

  private int inferredWorldSize() {
    int max = -1;
    for (FlightRecorderDump d : dumps.values()) {
      max = Math.max(max, d.rank());
      for (ProcessGroup g : d.processGroups()) {
        for (int r : g.getRanksList()) {
          max = Math.max(max, r);
        }
      }
    }
    for (int r : watchdog.keySet()) {
      max = Math.max(max, r);
    }
    for (int r : unreadable.keySet()) {
      max = Math.max(max, r);
    }
    return max + 1;
  }

  private RankEvidence fromDump(FlightRecorderDump d, Map<String, long[]> seqRanges, int world) {
    List<ProcessGroupProgress> progress = PgStatus.normalized(d, seqRanges);
    List<RankEvent> events = new ArrayList<>();
    return new RankEvidence(d.rank(), identity(d.rank(), world).toBuilder().setNcclVersion(d.commLibVersion())
        .build(), Liveness.UNKNOWN, true, "", withLayout(d.processGroups()), d.records(), progress, events,
        d.frames());
  }

  /**
   * A dump's records without its oldest op when the ring has wrapped past it and it completed long ago. PyTorch
   * overwrites the ring one entry at a time, so the oldest coalesced group may have lost its first members: what
   * is left would differ from the whole group other ranks hold and look like a mismatch. A ring that never
   * wrapped starts at record 0; an only-active dump holds nothing completed; both are kept whole.
   */
  static List<CollectiveRecord> withoutCutOp(List<CollectiveRecord> records) {
    if (records.isEmpty()) {
      return records;
    }
    CollectiveRecord oldest = records.get(0);
    if (oldest.getRecordId() == 0 || oldest.getState() != CollectiveState.COMPLETED) {
      return records;
    }
    List<CollectiveRecord> out = new ArrayList<>(records.size());
    for (CollectiveRecord r : records) {
      if (!sameOp(r, oldest)) {
        out.add(r);
      }
    }
    return out;
  }

  private static boolean sameOp(CollectiveRecord a, CollectiveRecord b) {
    return a.getIsP2P() == b.getIsP2P() && a.getProcessGroup().equals(b.getProcessGroup())
        && (a.getIsP2P() ? a.getP2PSeq() == b.getP2PSeq() : a.getCollectiveSeq() == b.getCollectiveSeq());
  }

  /**
   * Evidence from watchdog lines alone. A timeout line says the rank is inside one collective (group, seq, op,
   * element counts): it becomes a record the rank issued, so log lines go through the same matcher as dumps and a
   * rank inside a different op or size at the same seq is a mismatch. A status line adds the rank's last enqueued
   * and completed seqs. Group memberships are unknown, so each group is taken to be the ranks that logged for it.
   */
  private Map<Integer, RankEvidence> fromWatchdogLines(int world) {
    Map<Integer, Map<String, CollectiveRecord>> inside = collectivesInside();
    Map<String, TreeSet<Integer>> members = new TreeMap<>();
    watchdog.forEach((rank, lines) -> lines.forEach(l -> members.computeIfAbsent(groupName(l),
        g -> new TreeSet<>()).add(rank)));
    inside.forEach((rank, records) -> records.values().forEach(r -> members.computeIfAbsent(r.getProcessGroup(),
        g -> new TreeSet<>()).add(rank)));
    Map<Integer, RankEvidence> out = new TreeMap<>();
    watchdog.forEach((rank, lines) -> {
      Map<String, ProcessGroupProgress> progress = new TreeMap<>();
      List<RankEvent> events = new ArrayList<>();
      for (WatchdogLine l : lines) {
        events.addAll(events(l));
        if (l.lastEnqueued() >= 0) {
          progress.put(groupName(l), ProcessGroupProgress.newBuilder().setProcessGroup(groupName(l))
              .setLastEnqueuedSeq(l.lastEnqueued()).setLastStartedSeq(-1).setLastCompletedSeq(l.lastCompleted())
              .setLastEnqueuedP2PSeq(-1).setLastCompletedP2PSeq(-1).build());
        }
      }
      List<CollectiveRecord> records = List.copyOf(inside.getOrDefault(rank, Map.of()).values());
      Set<String> named = new TreeSet<>(progress.keySet());
      records.forEach(r -> named.add(r.getProcessGroup()));
      List<ProcessGroup> groups = new ArrayList<>();
      for (String name : named) {
        ProcessGroup.Builder g = ProcessGroup.newBuilder().setName(name).setDesc(descOf(lines, name));
        members.get(name).forEach(g::addRanks);
        groups.add(g.build());
      }
      out.put(rank, new RankEvidence(rank, identity(rank, world), Liveness.UNKNOWN, true, "",
          withLayout(groups), records, List.copyOf(progress.values()), events, Map.of(), RankEvidence.Source.LOG));
    });
    return out;
  }

  /**
   * Per rank, the collectives its timeout lines (and the collective checker's) say it is inside, by group and seq.
   * Old PyTorch prints no PG id on the timeout line: the rank's own status line for the same seq names the group
   * when there is one, else the group the peers' status lines name for that seq if only one; otherwise lines of
   * different ranks are taken to be the same collective only at the same seq, since ranks of different groups
   * print unrelated seqs.
   */
  private Map<Integer, Map<String, CollectiveRecord>> collectivesInside() {
    Map<Long, Set<String>> statusGroups = new HashMap<>();
    watchdog.values().forEach(lines -> lines.stream().filter(OfflineEvidence::isStatusOfAGroup)
        .forEach(l -> statusGroups.computeIfAbsent(l.seq(), k -> new TreeSet<>()).add(l.pgId())));
    Map<Integer, Map<String, CollectiveRecord>> out = new TreeMap<>();
    watchdog.forEach((rank, lines) -> {
      Map<Long, String> own = new HashMap<>();
      lines.stream().filter(OfflineEvidence::isStatusOfAGroup).forEach(l -> own.putIfAbsent(l.seq(), l.pgId()));
      Map<String, CollectiveRecord> inside = new TreeMap<>();
      for (WatchdogLine l : lines) {
        if ((l.kind() == WatchdogLine.Kind.TIMEOUT || l.kind() == WatchdogLine.Kind.RUNNING) && l.seq() > 0
            && !isP2p(l.opType())) {
          Set<String> peers = statusGroups.getOrDefault(l.seq(), Set.of());
          String group = !l.pgId().isEmpty() ? l.pgId() : own.containsKey(l.seq()) ? own.get(l.seq())
              : peers.size() == 1 ? peers.iterator().next() : "pg?@" + l.seq();
          inside.put(group + "#" + l.seq(), timedOut(l, group, inside.size()));
        }
      }
      if (!inside.isEmpty()) {
        out.put(rank, inside);
      }
    });
    return out;
  }

  private static boolean isStatusOfAGroup(WatchdogLine l) {
    return l.kind() == WatchdogLine.Kind.PG_STATUS && !l.pgId().isEmpty();
  }

  /**
   * The collective a timeout line says the rank is inside: issued, not known to have started or completed.
   * PyTorch prints the op in upper case without underscores between words (ALLREDUCE, _ALLGATHER_BASE); it is
   * compared only with other timeout lines, so it is kept as printed, in lower case.
   */
  private static CollectiveRecord timedOut(WatchdogLine l, String group, int id) {
    CollectiveRecord.Builder r = CollectiveRecord.newBuilder().setRecordId(id).setProcessGroup(group)
        .setCollectiveSeq(l.seq()).setOp(l.opType().toLowerCase(Locale.ROOT))
        .setState(CollectiveState.SCHEDULED).setTimeoutMs(Math.max(0, l.timeoutMs()));
    // NumelOut is left out: how it relates to NumelIn depends on the group's size, which the logs do not tell
    // (the ranks that logged are only some of the members).
    if (l.numelIn() >= 0) {
      r.addInputSizes(Shape.newBuilder().addDims(l.numelIn()));
    }
    return r.build();
  }

  /** P2P work prints the p2p seq in SeqNum on some versions and the collective seq on others: not matchable. */
  private static boolean isP2p(String opType) {
    return opType.equalsIgnoreCase("SEND") || opType.equalsIgnoreCase("RECV");
  }

  private static String groupName(WatchdogLine l) {
    return l.pgId().isEmpty() ? "pg?" : l.pgId();
  }

  private static String descOf(List<WatchdogLine> lines, String name) {
    return lines.stream().filter(l -> groupName(l).equals(name) && !l.pgDesc().isEmpty()).map(WatchdogLine::pgDesc)
        .findFirst().orElse("");
  }

  /** What a watchdog line tells of its rank: one event, two for a timeout noticed hours late. */
  private static List<RankEvent> events(WatchdogLine l) {
    if (l.kind() == WatchdogLine.Kind.RUNNING) {
      // What the rank was running is a record (fromWatchdogLines), not an event.
      return List.of();
    }
    RankEvent event = event(l);
    if (l.kind() != WatchdogLine.Kind.TIMEOUT || l.stuckSeconds() < 0) {
      return List.of(event);
    }
    // The watchdog noticed the timeout long after it passed: it had stopped, which the seq ties to this work.
    return List.of(event, event.toBuilder().setKind(RankEvent.Kind.WATCHDOG_STUCK).build());
  }

  private static RankEvent event(WatchdogLine l) {
    RankEvent.Kind kind = switch (l.kind()) {
      case TIMEOUT, PG_STATUS, DUMP_SIGNAL -> RankEvent.Kind.WATCHDOG_TIMEOUT;
      case WATCHDOG_STUCK -> RankEvent.Kind.WATCHDOG_STUCK;
      case CUDA_ERROR -> RankEvent.Kind.CUDA_ERROR;
      case RUNNING -> throw new IllegalStateException("a RUNNING line is a record, not an event");
    };
    return RankEvent.newBuilder().setKind(kind).setProcessGroup(groupName(l)).setSeq(l.seq())
        .setOp(l.opType().toLowerCase()).setMessage(l.source() + ": " + l.text()).setLastEnqueuedSeq(l.lastEnqueued())
        .setLastCompletedSeq(l.lastCompleted()).build();
  }

  private static List<ProcessGroup> withLayout(List<ProcessGroup> groups) {
    List<ProcessGroup> out = new ArrayList<>(groups.size());
    for (ProcessGroup g : groups) {
      if (g.getRanksCount() == 0) {
        continue;
      }
      CommsId.GroupLayout layout = CommsId.layoutOf(g.getRanksList().stream().mapToInt(Integer::intValue).toArray());
      out.add(g.toBuilder().setGlobalRankStart(layout.start()).setGlobalRankStride(layout.stride()).build());
    }
    return out;
  }

  /**
   * Each group's identity across ranks (name + members) by its name on this rank; computed once per dump, as
   * the members of a large job's world group make a long key.
   */
  private static RankIdentity identity(int rank, int world) {
    return RankIdentity.newBuilder().setGlobalRank(rank).setWorldSize(Math.max(world, rank + 1)).setLocalRank(-1)
        .setCudaDevice(-1).build();
  }
}
