package dev.frdiag.evidence;

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
import dev.frdiag.proto.v1.ThreadStacks;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.readers.pytorch.PgStatus;
import dev.frdiag.readers.pytorch.RecordedMembers;
import dev.frdiag.readers.pytorch.WatchdogLine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Turns what a user has after a hang (Flight Recorder dumps, watchdog lines from training logs) into the evidence
 * the daemon's analysis reads, so offline and live diagnoses come from one engine.
 */
final class OfflineEvidence {
  private final List<String> unread = new ArrayList<>();
  private final Map<Integer, FlightRecorderDump> dumps = new TreeMap<>();
  /** Each dump's largest seqs per group name (see {@link PgStatus#seqsByName}), by rank. */
  private final Map<Integer, Map<String, long[]>> seqsByName = new HashMap<>();
  private final Map<Integer, String> unreadable = new TreeMap<>();
  private final Map<Integer, List<WatchdogLine>> watchdog = new TreeMap<>();
  private final List<NodeContext> context = new ArrayList<>();
  private final Map<Integer, ThreadStacks> stacks = new TreeMap<>();
  private int worldSize;

  /**
   * Adds one rank's dump. What it takes from the dump's records is worked out now, while the other dumps are still
   * being read.
   */
  public OfflineEvidence add(FlightRecorderDump dump) {
    List<CollectiveRecord> kept = withoutCutOp(dump.records());
    FlightRecorderDump d = kept == dump.records() ? dump : new FlightRecorderDump(dump.file(), dump.rank(),
        dump.version(), dump.commLibVersion(), dump.processGroups(), kept, dump.progress(), dump.frames(),
        dump.warnings());
    dumps.put(d.rank(), d);
    seqsByName.put(d.rank(), PgStatus.seqsByName(d));
    return this;
  }

  /**
   * Adds where rank {@code rank}'s Python threads were (a stack dump).
   *
   * @return false when the rank already has one, which is kept: one moment per rank
   */
  public boolean add(int rank, ThreadStacks threads) {
    return stacks.putIfAbsent(rank, threads) == null;
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
    // Dumps that list no members (gloo) get them from the job's dumps together, before groups are compared.
    List<FlightRecorderDump> all = RecordedMembers.complete(dumps.values(), world);
    PgStatus.SeqRanges seqRanges = PgStatus.seqRanges(all, d -> seqsByName.get(d.rank()));
    Map<Integer, RankEvidence> ranks = new TreeMap<>();
    for (FlightRecorderDump d : all) {
      ranks.put(d.rank(), fromDump(d, seqRanges, world));
    }
    Map<Integer, RankEvidence> fromLogs = WatchdogEvidence.of(watchdog, rank -> identity(rank, world));
    Map<String, ProcessGroup> dumpGroups = new HashMap<>();
    // The first dump's description of each group, which fromDump gave the ranks already.
    all.forEach(d -> ranks.get(d.rank()).groups().forEach(g -> dumpGroups.putIfAbsent(g.getName(), g)));
    fromLogs.forEach((rank, logged) -> {
      RankEvidence e = ranks.get(rank);
      if (e == null) {
        // Each rank's best evidence: a rank with no dump is read from its lines, in the groups the dumps describe
        // (a log names a group by the name its dump's pg_config uses), so both sources meet in one matcher.
        ranks.put(rank, inDumpGroups(logged, dumpGroups));
        return;
      }
      ranks.put(rank, e.withEvents(logged.events()));
    });
    for (Map.Entry<Integer, String> u : unreadable.entrySet()) {
      ranks.putIfAbsent(u.getKey(), new RankEvidence(u.getKey(), identity(u.getKey(), world), Liveness.UNKNOWN,
          false, u.getValue(), List.of(), List.of(), List.of(), List.of(), Map.of()));
    }
    // Stacks say where a rank's threads are, not where its collectives are: they join the rank's evidence and
    // make none of their own (a rank with stacks only is as unknown to the matcher as one with nothing).
    stacks.forEach((rank, threads) -> {
      RankEvidence e = ranks.get(rank);
      if (e != null) {
        ranks.put(rank, e.withStacks(threads));
      }
    });
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
        for (int i = 0; i < g.getRanksCount(); i++) {
          max = Math.max(max, g.getRanks(i));
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

  private RankEvidence fromDump(FlightRecorderDump d, PgStatus.SeqRanges seqRanges, int world) {
    List<ProcessGroupProgress> progress = PgStatus.normalized(d, seqRanges);
    List<RankEvent> events = new ArrayList<>();
    return new RankEvidence(d.rank(), identity(d.rank(), world).toBuilder().setNcclVersion(d.commLibVersion())
        .build(), Liveness.UNKNOWN, true, "", withLayout(d.processGroups()), d.records(), progress, events,
        d.frames()).withObservedAt(writtenAt(d));
  }

  /**
   * When {@code d} was taken, as its file's write time says: PyTorch writes a dump as it takes it, on the rank's own
   * host, whose clock also stamped its records. 0 when unknown, or when the write time is older than the dump's
   * newest record (a copy that did not keep it, or another host's clock): then nothing is claimed of when.
   */
  static long writtenAt(FlightRecorderDump d) {
    long written;
    try {
      java.nio.file.attribute.FileTime t = java.nio.file.Files.getLastModifiedTime(d.file());
      written = t.toInstant().getEpochSecond() * 1_000_000_000L + t.toInstant().getNano();
    } catch (java.io.IOException | RuntimeException e) {
      return 0;
    }
    long newest = 0;
    for (CollectiveRecord r : d.records()) {
      newest = Math.max(newest, Math.max(r.getTimeCreatedNs(),
          Math.max(r.getTimeStartedNs(), r.getTimeCompletedNs())));
    }
    return newest > 0 && written >= newest ? written : 0;
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

  /** {@code logged} with each group it names replaced by the dumps' description of it, where there is one. */
  private static RankEvidence inDumpGroups(RankEvidence logged, Map<String, ProcessGroup> dumpGroups) {
    if (dumpGroups.isEmpty()) {
      return logged;
    }
    List<ProcessGroup> groups = logged.groups().stream().map(g -> dumpGroups.getOrDefault(g.getName(), g))
        .toList();
    return new RankEvidence(logged.rank(), logged.identity(), logged.liveness(), logged.answered(),
        logged.missingReason(), groups, logged.records(), logged.progress(), logged.events(), logged.frames(),
        logged.source());
  }

  static List<ProcessGroup> withLayout(List<ProcessGroup> groups) {
    List<ProcessGroup> out = new ArrayList<>(groups.size());
    for (ProcessGroup g : groups) {
      if (g.getRanksCount() == 0) {
        continue;
      }
      out.add(CommsId.withLayout(g));
    }
    return out;
  }

  /**
   * What a dump says of its rank's identity: its global rank in a world of at least {@code world} ranks; no local
   * rank or device.
   */
  private static RankIdentity identity(int rank, int world) {
    return RankIdentity.newBuilder().setGlobalRank(rank).setWorldSize(Math.max(world, rank + 1)).setLocalRank(-1)
        .setCudaDevice(-1).build();
  }
}
