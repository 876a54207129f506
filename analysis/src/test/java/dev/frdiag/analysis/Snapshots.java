package dev.frdiag.analysis;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.proto.v1.ThreadStacks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Hand-built per-rank snapshots for analysis tests: a small job whose ranks issue ops in a given order. */
final class Snapshots {
  private final int worldSize;
  private final Map<String, int[]> groups = new TreeMap<>();
  private final Map<Integer, List<CollectiveRecord>> records = new TreeMap<>();
  private final Map<Integer, Map<String, Long>> seqs = new TreeMap<>();
  private final Map<Integer, Liveness> liveness = new TreeMap<>();
  private final Map<Integer, List<RankEvent>> events = new TreeMap<>();
  private final List<Integer> unanswered = new ArrayList<>();
  private final Map<Integer, ThreadStacks> stacks = new TreeMap<>();
  private long clock = 1_000_000_000L;

  Snapshots(int worldSize) {
    this.worldSize = worldSize;
    int[] all = new int[worldSize];
    Arrays.setAll(all, i -> i);
    groups.put("0", all);
    for (int r = 0; r < worldSize; r++) {
      records.put(r, new ArrayList<>());
      seqs.put(r, new TreeMap<>());
    }
  }

  Snapshots group(String name, int... members) {
    groups.put(name, members);
    return this;
  }

  /** Every member of {@code group} issues {@code op} with the given state, at the same time. */
  Snapshots all(String group, String op, CollectiveState state) {
    clock += 1_000;
    for (int r : groups.get(group)) {
      issue(r, group, op, state, 1024, "Float");
    }
    return this;
  }

  /** Only the listed ranks issue {@code op}. */
  Snapshots only(String group, String op, CollectiveState state, int... ranks) {
    clock += 1_000;
    for (int r : ranks) {
      issue(r, group, op, state, 1024, "Float");
    }
    return this;
  }

  /** One op of {@code size} elements per rank, with output sizes as the op implies (gathers grow by the group). */
  Snapshots issue(int rank, String group, String op, CollectiveState state, long size, String dtype) {
    int n = groups.get(group).length;
    long out = op.contains("all_gather") ? size * n : op.contains("reduce_scatter") ? size / n : size;
    return issue(rank, group, op, state, size, out, dtype);
  }

  /** One op with its own input and output numel (one 1-D tensor each side). */
  Snapshots issue(int rank, String group, String op, CollectiveState state, long in, long out, String dtype) {
    boolean p2p = op.equals("send") || op.equals("recv");
    long seq = seqs.get(rank).merge(group + (p2p ? "/p2p" : ""), 1L, Long::sum);
    record(rank, group, op, seq, state, in, out, dtype);
    return this;
  }

  /** A send or recv between {@code rank} and {@code peer} in a group of any size. */
  Snapshots p2p(int rank, String group, String op, int peer, CollectiveState state) {
    long seq = seqs.get(rank).merge(group + "/p2p", 1L, Long::sum);
    record(rank, group, op, seq, state, 64, 64, "Float");
    List<CollectiveRecord> mine = records.get(rank);
    mine.set(mine.size() - 1, mine.get(mine.size() - 1).toBuilder().setPeer(peer).build());
    return this;
  }

  /** {@code rank}'s newest record with output dtype {@code dtype}. */
  Snapshots outputDtype(int rank, String dtype) {
    List<CollectiveRecord> mine = records.get(rank);
    mine.set(mine.size() - 1, mine.get(mine.size() - 1).toBuilder().setOutputDtypes(0, dtype).build());
    return this;
  }

  /** A coalesced group of {@code ops} on {@code group}: one seq shared by all, closed by its end marker. */
  Snapshots coalesced(int rank, String group, CollectiveState state, long size, String... ops) {
    long seq = seqs.get(rank).merge(group, 1L, Long::sum);
    for (String op : ops) {
      record(rank, group, op, seq, state, size, size, "Float");
    }
    record(rank, group, "coalesced", seq, state, 0, 0, "Float");
    return this;
  }

  private void record(int rank, String group, String op, long seq, CollectiveState state, long in, long out,
      String dtype) {
    boolean p2p = op.equals("send") || op.equals("recv");
    int[] members = groups.get(group);
    int peer = -1;
    if (p2p) {
      for (int m : members) {
        if (m != rank) {
          peer = m;
        }
      }
    }
    CollectiveRecord.Builder b = CollectiveRecord.newBuilder()
        .setRecordId(records.get(rank).size() + 1000L * rank)
        .setProcessGroup(group).setOp(op).setIsP2P(p2p).setPeer(peer)
        .setCollectiveSeq(p2p ? 0 : seq).setP2PSeq(p2p ? seq : 0)
        .setState(state)
        .setTimeCreatedNs(clock)
        .setTimeStartedNs(state == CollectiveState.SCHEDULED ? 0 : clock + 10)
        .setTimeCompletedNs(state == CollectiveState.COMPLETED ? clock + 20 : 0)
        .setCommsId(CommsId.of(group, seq, p2p, CommsId.layoutOf(members)));
    if (!op.equals("coalesced")) {
      b.addInputSizes(Shape.newBuilder().addDims(in)).addOutputSizes(Shape.newBuilder().addDims(out))
          .addInputDtypes(dtype).addOutputDtypes(dtype);
    }
    records.get(rank).add(b.build());
  }

  /** Where {@code rank}'s Python threads were (its stack dump). */
  Snapshots stacks(int rank, ThreadStacks threads) {
    stacks.put(rank, threads);
    return this;
  }

  /** Every record of {@code rank} names {@code threadId} as the thread that issued it, as Flight Recorder does. */
  Snapshots thread(int rank, long threadId) {
    records.get(rank).replaceAll(c -> c.toBuilder().setThreadId(Long.toUnsignedString(threadId)).build());
    return this;
  }

  Snapshots lost(int rank) {
    liveness.put(rank, Liveness.LOST);
    return this;
  }

  Snapshots unanswered(int rank) {
    unanswered.add(rank);
    return this;
  }

  Snapshots event(int rank, RankEvent.Kind kind) {
    return event(rank, RankEvent.newBuilder().setKind(kind).build());
  }

  Snapshots event(int rank, RankEvent event) {
    events.computeIfAbsent(rank, r -> new ArrayList<>()).add(event);
    return this;
  }

  /** Drops the oldest {@code n} records of {@code rank} alone, as its ring (or the daemon's window of it) would. */
  Snapshots dropOldest(int rank, int n) {
    List<CollectiveRecord> mine = records.get(rank);
    records.put(rank, new ArrayList<>(mine.subList(Math.min(n, mine.size()), mine.size())));
    return this;
  }

  /** Drops the oldest {@code n} records of every rank, as a wrapped ring would. */
  Snapshots wrap(int n) {
    records.replaceAll((r, list) -> new ArrayList<>(list.subList(Math.min(n, list.size()), list.size())));
    return this;
  }

  List<RankEvidence> ranks() {
    List<RankEvidence> out = new ArrayList<>();
    for (int r = 0; r < worldSize; r++) {
      List<ProcessGroup> mine = new ArrayList<>();
      for (Map.Entry<String, int[]> g : groups.entrySet()) {
        if (contains(g.getValue(), r)) {
          CommsId.GroupLayout layout = CommsId.layoutOf(g.getValue());
          ProcessGroup.Builder pg = ProcessGroup.newBuilder().setName(g.getKey()).setDesc(g.getKey() + "_desc")
              .setGlobalRankStart(layout.start()).setGlobalRankStride(layout.stride());
          Arrays.stream(g.getValue()).forEach(pg::addRanks);
          mine.add(pg.build());
        }
      }
      boolean answered = !unanswered.contains(r);
      out.add(new RankEvidence(r, RankIdentity.newBuilder().setJobId("t").setGlobalRank(r).setWorldSize(worldSize)
          .setHostname("node" + (r / 4)).setPid(100 + r).setCudaDevice(r % 4).build(),
          liveness.getOrDefault(r, Liveness.ALIVE), answered, answered ? "" : "no reply",
          mine, answered || liveness.containsKey(r) ? records.get(r) : List.of(), List.of(),
          events.getOrDefault(r, List.of()), Map.of()).withStacks(stacks.getOrDefault(r,
          ThreadStacks.getDefaultInstance())));
    }
    return out;
  }

  /** Offline evidence (as from dump files). */
  JobEvidence offline() {
    return new JobEvidence("t", worldSize, ranks(), 0, Duration.ofSeconds(1));
  }

  /** Live evidence observed {@code sinceLast} after the newest record. */
  JobEvidence liveAfter(Duration sinceLast) {
    return new JobEvidence("t", worldSize, ranks(), clock + sinceLast.toNanos(), Duration.ofSeconds(1));
  }

  private static boolean contains(int[] a, int v) {
    for (int x : a) {
      if (x == v) {
        return true;
      }
    }
    return false;
  }
}
