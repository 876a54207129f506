package dev.frdiag.evidence;

import dev.frdiag.analysis.Liveness;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.readers.pytorch.OpTypes;
import dev.frdiag.readers.pytorch.WatchdogLine;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.IntFunction;

/**
 * What PyTorch's watchdog lines say of each rank that printed them, as the evidence a ring would give: the
 * collectives it is inside, its counters per process group, the events it reported. Lines then go through the same
 * matcher as Flight Recorder records, so an op or size mismatch, a laggard or a rank that ran ahead come from one
 * engine whatever the source.
 */
final class WatchdogEvidence {
  /**
   * How far apart the seqs of lines that name no group may be and still be taken as one group. Ranks of one group
   * in a hang are at most a few collectives apart (asynchronous launch lets a rank issue a few more); different
   * groups' counters are unrelated, so an assumption, marked as such on the group.
   */
  static final long NEAR_SEQS = 16;

  private static final String UNNAMED = "pg?";

  private final Map<Integer, List<WatchdogLine>> lines;
  /** Each line's group: the name it prints, else the one resolved for it. */
  private final Map<WatchdogLine, String> groupOf = new HashMap<>();
  private final Set<String> assumed = new TreeSet<>();
  private final Map<String, TreeSet<Integer>> members = new TreeMap<>();
  /** Per group, the highest seq any rank's collective checker was seen running. */
  private final Map<String, Long> checkerFront = new HashMap<>();

  private WatchdogEvidence(Map<Integer, List<WatchdogLine>> lines) {
    this.lines = lines;
    resolveGroups();
    lines.forEach((rank, ls) -> ls.forEach(l -> members.computeIfAbsent(groupOf.get(l), g -> new TreeSet<>())
        .add(rank)));
    lines.values().forEach(ls -> ls.stream().filter(l -> l.kind() == WatchdogLine.Kind.RUNNING)
        .forEach(l -> checkerFront.merge(groupOf.get(l), l.seq(), Math::max)));
  }

  /**
   * Each rank's evidence from its lines alone. A timeout line says the rank is inside one collective (group, seq,
   * op, element counts), which becomes a record it issued. Without a status line, a timeout on seq S also says the
   * rank completed S − 1: the watchdog checks its work in issue order and all of it has one timeout, so an earlier
   * unfinished collective would have timed out first (status lines, where printed, always read "at work S, last
   * completed S − 1"). A status line gives the rank's counters. Group memberships are not printed, so each group is
   * taken to be the ranks that logged for it.
   *
   * @param identity the identity to give each rank
   */
  static Map<Integer, RankEvidence> of(Map<Integer, List<WatchdogLine>> lines, IntFunction<RankIdentity> identity) {
    return new WatchdogEvidence(lines).build(identity);
  }

  /** The group each line is about, by the same resolution {@link #of} uses. */
  static String groupName(WatchdogLine l) {
    return l.pgName().isEmpty() ? UNNAMED : l.pgName();
  }

  private Map<Integer, RankEvidence> build(IntFunction<RankIdentity> identity) {
    Map<Integer, RankEvidence> out = new TreeMap<>();
    lines.forEach((rank, ls) -> {
      Map<String, CollectiveRecord> inside = new TreeMap<>();
      Map<String, long[]> counters = new TreeMap<>();
      Set<String> withStatus = new TreeSet<>();
      List<RankEvent> events = new ArrayList<>();
      for (WatchdogLine l : ls) {
        String group = groupOf.get(l);
        events.addAll(events(l, group));
        if (l.lastEnqueued() >= 0) {
          counters.put(group, new long[] {l.lastEnqueued(), l.lastCompleted()});
          withStatus.add(group);
        }
      }
      for (WatchdogLine l : ls) {
        String group = groupOf.get(l);
        // Timeouts print seq -1 when their PyTorch had none; the checker's own count starts at 0.
        if (l.seq() < 0 || l.seq() == 0 && l.kind() != WatchdogLine.Kind.RUNNING || isP2p(l.opType())) {
          continue;
        }
        if (l.kind() == WatchdogLine.Kind.TIMEOUT) {
          inside.put(group + "#" + l.seq(), issued(l, group, inside.size()));
          if (!withStatus.contains(group)) {
            counters.merge(group, new long[] {l.seq(), l.seq() - 1},
                (a, b) -> new long[] {Math.max(a[0], b[0]), Math.min(a[1], b[1])});
          }
        } else if (l.kind() == WatchdogLine.Kind.RUNNING) {
          // The collective checker runs a gloo exchange before each NCCL collective: a member seen running seq S
          // means every member passed the check of S − 1. A member last seen before the front never reached it.
          long front = checkerFront.get(group);
          if (l.seq() == front) {
            inside.put(group + "#" + l.seq(), issued(l, group, inside.size()));
          }
          if (!withStatus.contains(group)) {
            counters.merge(group, new long[] {l.seq() == front ? front : front - 1, front - 1},
                (a, b) -> new long[] {Math.max(a[0], b[0]), Math.max(a[1], b[1])});
          }
        }
      }
      List<ProcessGroupProgress> progress = new ArrayList<>();
      counters.forEach((group, c) -> progress.add(ProcessGroupProgress.newBuilder().setProcessGroup(group)
          .setLastEnqueuedSeq(c[0]).setLastStartedSeq(-1).setLastCompletedSeq(c[1]).setLastEnqueuedP2PSeq(-1)
          .setLastCompletedP2PSeq(-1).build()));
      Set<String> named = new TreeSet<>(counters.keySet());
      inside.values().forEach(r -> named.add(r.getProcessGroup()));
      List<ProcessGroup> groups = new ArrayList<>();
      for (String name : named) {
        ProcessGroup.Builder g = ProcessGroup.newBuilder().setName(name).setDesc(descOf(ls, name))
            .setAssumed(assumed.contains(name));
        members.get(name).forEach(g::addRanks);
        groups.add(g.build());
      }
      out.put(rank, new RankEvidence(rank, identity.apply(rank), Liveness.UNKNOWN, true, "",
          OfflineEvidence.withLayout(groups), List.copyOf(inside.values()), progress, events, Map.of(),
          RankEvidence.Source.LOG));
    });
    return out;
  }

  /**
   * Names the group of every line. A line that prints one is about that group. Old PyTorch prints none on the
   * timeout line: the rank's own status line for the same seq names it when there is one, else the group the peers'
   * status lines name for that seq if only one. Lines still unnamed are clustered by seq: at one seq they are taken
   * to be one collective (ranks of different groups print unrelated seqs, so equal seqs are no coincidence); at
   * seqs within {@link #NEAR_SEQS} of each other they are taken to be one group, an assumption the group carries.
   */
  private void resolveGroups() {
    Map<Long, Set<String>> statusGroups = new HashMap<>();
    lines.values().forEach(ls -> ls.stream().filter(WatchdogEvidence::isStatusOfAGroup)
        .forEach(l -> statusGroups.computeIfAbsent(l.seq(), k -> new TreeSet<>()).add(l.pgName())));
    List<WatchdogLine> unnamed = new ArrayList<>();
    lines.values().forEach(ls -> {
      Map<Long, String> own = new HashMap<>();
      ls.stream().filter(WatchdogEvidence::isStatusOfAGroup).forEach(l -> own.putIfAbsent(l.seq(), l.pgName()));
      for (WatchdogLine l : ls) {
        Set<String> peers = statusGroups.getOrDefault(l.seq(), Set.of());
        if (!l.pgName().isEmpty()) {
          groupOf.put(l, l.pgName());
        } else if (l.seq() <= 0) {
          groupOf.put(l, UNNAMED);
        } else if (own.containsKey(l.seq())) {
          groupOf.put(l, own.get(l.seq()));
        } else if (peers.size() == 1) {
          groupOf.put(l, peers.iterator().next());
        } else {
          unnamed.add(l);
        }
      }
    });
    TreeSet<Long> seqs = new TreeSet<>();
    unnamed.forEach(l -> seqs.add(l.seq()));
    Map<Long, String> clusterOf = new HashMap<>();
    List<Long> cluster = new ArrayList<>();
    for (long s : seqs) {
      if (!cluster.isEmpty() && s - cluster.get(cluster.size() - 1) > NEAR_SEQS) {
        name(cluster, clusterOf);
        cluster.clear();
      }
      cluster.add(s);
    }
    name(cluster, clusterOf);
    unnamed.forEach(l -> groupOf.put(l, clusterOf.get(l.seq())));
  }

  private void name(List<Long> cluster, Map<Long, String> clusterOf) {
    if (cluster.isEmpty()) {
      return;
    }
    long first = cluster.get(0);
    long last = cluster.get(cluster.size() - 1);
    String name = UNNAMED + "@" + first + (last == first ? "" : "-" + last);
    if (last != first) {
      assumed.add(name);
    }
    cluster.forEach(s -> clusterOf.put(s, name));
  }

  private static boolean isStatusOfAGroup(WatchdogLine l) {
    return l.kind() == WatchdogLine.Kind.PG_STATUS && !l.pgName().isEmpty();
  }

  /**
   * The collective a line says the rank is inside: issued, not known to have started or completed, its op under
   * the name Flight Recorder records give it, so lines and dumps of one job compare.
   */
  private static CollectiveRecord issued(WatchdogLine l, String group, int id) {
    CollectiveRecord.Builder r = CollectiveRecord.newBuilder().setRecordId(id).setProcessGroup(group)
        .setCollectiveSeq(l.seq()).setOp(OpTypes.profilingName(l.opType())).setState(CollectiveState.SCHEDULED)
        .setTimeoutMs(Math.max(0, l.timeoutMs()));
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

  private String descOf(List<WatchdogLine> ls, String name) {
    return ls.stream().filter(l -> groupOf.get(l).equals(name) && !l.pgDesc().isEmpty()).map(WatchdogLine::pgDesc)
        .findFirst().orElse("");
  }

  /** What a watchdog line tells of its rank: one event, two for a timeout noticed hours late. */
  static List<RankEvent> events(WatchdogLine l, String group) {
    if (l.kind() == WatchdogLine.Kind.RUNNING) {
      // What the rank was running is a record, not an event.
      return List.of();
    }
    RankEvent event = event(l, group);
    if (l.kind() != WatchdogLine.Kind.TIMEOUT || l.stuckSeconds() < 0) {
      return List.of(event);
    }
    // The watchdog noticed the timeout long after it passed: it had stopped, which the seq ties to this work.
    return List.of(event, event.toBuilder().setKind(RankEvent.Kind.WATCHDOG_STUCK).build());
  }

  private static RankEvent event(WatchdogLine l, String group) {
    RankEvent.Kind kind = switch (l.kind()) {
      case TIMEOUT, PG_STATUS, DUMP_SIGNAL -> RankEvent.Kind.WATCHDOG_TIMEOUT;
      case WATCHDOG_STUCK -> RankEvent.Kind.WATCHDOG_STUCK;
      case CUDA_ERROR -> RankEvent.Kind.CUDA_ERROR;
      case MISMATCH_REPORTED -> RankEvent.Kind.COLLECTIVE_MISMATCH;
      case RUNNING -> throw new IllegalStateException("a RUNNING line is a record, not an event");
    };
    return RankEvent.newBuilder().setKind(kind).setProcessGroup(group).setSeq(l.seq())
        .setOp(OpTypes.profilingName(l.opType())).setMessage(l.source() + ": " + l.text())
        .setLastEnqueuedSeq(l.lastEnqueued()).setLastCompletedSeq(l.lastCompleted())
        .setOwnTimeout(l.kind() == WatchdogLine.Kind.DUMP_SIGNAL && l.fromRank() < 0).build();
  }
}
