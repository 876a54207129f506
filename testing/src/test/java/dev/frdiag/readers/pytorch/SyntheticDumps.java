package dev.frdiag.readers.pytorch;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.Shape;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Hand-built dumps of an 8-rank job, in the canonical form the reader produces, so that writing and reading
 * one back must give it unchanged. They exercise what the real samples lack: started and completed states,
 * durations, stack frames (more than 256 memoized strings), non-NCCL backends, a group whose members are not an
 * arithmetic progression and are not listed in sorted order, and 64-bit record ids.
 */
final class SyntheticDumps {
  static final int WORLD = 8;
  static final long T0 = 1_758_610_505_880_883_597L;

  private SyntheticDumps() {}

  static List<FlightRecorderDump> job(String version, boolean withFrames) {
    List<FlightRecorderDump> dumps = new ArrayList<>();
    for (int r = 0; r < WORLD; r++) {
      dumps.add(rank(r, version, withFrames));
    }
    return dumps;
  }

  static FlightRecorderDump rank(int rank, String version, boolean withFrames) {
    DumpVersion v = DumpVersion.parse(version);
    boolean threads = v.atLeast(DumpVersion.THREAD_FIELDS);
    Map<String, ProcessGroup> groups = new LinkedHashMap<>();
    group(groups, "0", "default_pg", new int[] {0, 1, 2, 3, 4, 5, 6, 7});
    group(groups, rank < 4 ? "1" : "2", "TENSOR_MODEL_PARALLEL_GROUP",
        rank < 4 ? new int[] {0, 1, 2, 3} : new int[] {4, 5, 6, 7});
    group(groups, Integer.toString(3 + rank % 4), "PIPELINE_MODEL_PARALLEL_GROUP",
        new int[] {rank % 4, rank % 4 + 4});
    int[] expert = {5, 0, 1};
    boolean inExpert = rank == 0 || rank == 1 || rank == 5;
    if (inExpert) {
      group(groups, "10", "EXPERT_MODEL_PARALLEL_GROUP", expert);
    }
    String tp = rank < 4 ? "1" : "2";
    String pp = Integer.toString(3 + rank % 4);

    Map<Integer, Frame> frames = new LinkedHashMap<>();
    List<CollectiveRecord> records = new ArrayList<>();
    long recordId = (1L << 33) + 17;
    String thread = threads ? "pt_autograd_" + rank : "";
    String threadId = threads ? Long.toString(23437656749760L + rank) : "";

    CollectiveRecord.Builder allReduce = record(groups.get("0"), recordId++, 41, 0, 41, "nccl", "all_reduce",
        false, -1, CollectiveState.COMPLETED, T0, thread, threadId)
        .setTimeStartedNs(T0 + 1_000).setTimeCompletedNs(T0 + 2_500_000).setDurationMs(1.25)
        .addInputSizes(shape(1024, 1024)).addOutputSizes(shape(1024, 1024))
        .addInputDtypes("Float").addOutputDtypes("Float");
    records.add(withFrames ? frames(allReduce, frames, 0, 300) : allReduce.build());

    CollectiveRecord.Builder gather = record(groups.get(tp), recordId++, 7, 0, 9, "nccl", "_all_gather_base",
        false, -1, CollectiveState.STARTED, T0 + 10_000, thread, threadId)
        .setTimeStartedNs(T0 + 20_000)
        .addInputSizes(shape(4096, 5120)).addOutputSizes(shape(16384, 5120))
        .addInputDtypes("BFloat16").addOutputDtypes("BFloat16");
    records.add(withFrames ? frames(gather, frames, 290, 3) : gather.build());

    ProcessGroup ppGroup = groups.get(pp);
    int ppPeer = ppGroup.getRanks(0) == rank ? ppGroup.getRanks(1) : ppGroup.getRanks(0);
    String ppOp = ppGroup.getRanks(0) == rank ? "send" : "recv";
    CollectiveRecord.Builder p2p = record(ppGroup, recordId++, 29, 14147, 14176, "nccl", ppOp, true, ppPeer,
        CollectiveState.SCHEDULED, T0 + 30_000, thread, threadId)
        .addInputSizes(shape(2048, 1, 5120)).addOutputSizes(shape(2048, 1, 5120))
        .addInputDtypes("BFloat16").addOutputDtypes("BFloat16");
    records.add(withFrames ? frames(p2p, frames, 300, 2) : p2p.build());
    records.add(record(ppGroup, recordId++, 29, 14147, 14177, "nccl", "coalesced", true, -1,
        CollectiveState.SCHEDULED, T0 + 31_000, thread, threadId).build());

    records.add(record(groups.get("0"), recordId++, 42, 0, 42, "gloo", "broadcast", false, -1,
        CollectiveState.SCHEDULED, T0 + 40_000, thread, threadId).setRetired(true)
        .addInputSizes(shape()).addOutputSizes(shape()).addInputDtypes("Long").addOutputDtypes("Long").build());

    if (inExpert) {
      ProcessGroup ep = groups.get("10");
      int me = ep.getRanksList().indexOf(rank);
      records.add(record(ep, recordId++, 3, 0, 3, "ncclx", "all_to_all", false, -1, CollectiveState.SCHEDULED,
          T0 + 50_000, thread, threadId).addInputSizes(shape(4183, 5120)).addOutputSizes(shape(4096, 5120))
          .addInputDtypes("BFloat16").addOutputDtypes("BFloat16").build());
      records.add(record(ep, recordId++, 3, 1, 4, "xccl", "send", true, expert[(me + 1) % 3],
          CollectiveState.SCHEDULED, T0 + 60_000, thread, threadId).addInputSizes(shape(8))
          .addOutputSizes(shape(8)).addInputDtypes("Float").addOutputDtypes("Float").build());
    }

    List<ProcessGroup> sorted = groups.values().stream()
        .sorted(Comparator.comparing(ProcessGroup::getName).thenComparing(ProcessGroup::getDesc)).toList();
    List<ProcessGroupProgress> progress = groups.values().stream()
        .sorted(Comparator.comparingLong(g -> Long.parseLong(g.getLocalId())))
        .map(g -> ProcessGroupProgress.newBuilder().setProcessGroup(g.getName())
            .setLastEnqueuedSeq(g.getName().equals("0") ? 42 : 300 + Long.parseLong(g.getLocalId()))
            .setLastStartedSeq(-1).setLastCompletedSeq(g.getName().equals("0") ? 41 : 299)
            .setLastEnqueuedP2PSeq(-1).setLastCompletedP2PSeq(-1).build())
        .toList();
    return new FlightRecorderDump(Path.of("synthetic", "_dump_" + rank), rank, version,
        v.atLeast(DumpVersion.NCCL_VERSION_KEY) ? "2.27.3" : "", sorted, records, progress, frames, List.of());
  }

  /** pg_id grows with the (numeric) name, as PyTorch hands both out in creation order. */
  private static void group(Map<String, ProcessGroup> groups, String name, String desc, int[] ranks) {
    CommsId.GroupLayout layout = CommsId.layoutOf(ranks);
    long pgId = Long.parseLong(name) * 2;
    ProcessGroup.Builder b = ProcessGroup.newBuilder().setName(name).setDesc(desc)
        .setGlobalRankStart(layout.start()).setGlobalRankStride(layout.stride()).setLocalId(Long.toString(pgId));
    for (int r : ranks) {
      b.addRanks(r);
    }
    groups.put(name, b.build());
  }

  static CollectiveRecord.Builder record(ProcessGroup g, long recordId, long collectiveSeq, long p2pSeq,
      long opId, String backend, String op, boolean p2p, int peer, CollectiveState state, long created,
      String thread, String threadId) {
    int[] ranks = g.getRanksList().stream().mapToInt(Integer::intValue).toArray();
    return CollectiveRecord.newBuilder().setRecordId(recordId).setProcessGroup(g.getName())
        .setCollectiveSeq(collectiveSeq).setP2PSeq(p2pSeq).setOpId(opId).setBackend(backend).setOp(op)
        .setIsP2P(p2p).setPeer(peer).setState(state).setTimeCreatedNs(created).setTimeoutMs(600_000)
        .setThreadName(thread).setThreadId(threadId)
        .setCommsId(CommsId.of(g.getName(), p2p ? p2pSeq : collectiveSeq, p2p, CommsId.layoutOf(ranks)));
  }

  static Shape shape(long... dims) {
    Shape.Builder s = Shape.newBuilder();
    for (long d : dims) {
      s.addDims(d);
    }
    return s.build();
  }

  /** Adds frames {@code from, from + count)} of a made-up call stack, interning them as the reader does. */
  private static CollectiveRecord frames(CollectiveRecord.Builder b, Map<Integer, Frame> table, int from,
      int count) {
    for (int i = from; i < from + count; i++) {
      Frame f = Frame.newBuilder().setName(i % 2 == 0 ? "forward" : "step_" + i)
          .setFilename("/workspace/megatron/module_" + i + ".py").setLine(100 + i).build();
      int id = -1;
      for (Map.Entry<Integer, Frame> e : table.entrySet()) {
        if (e.getValue().equals(f)) {
          id = e.getKey();
        }
      }
      if (id < 0) {
        id = table.size();
        table.put(id, f);
      }
      b.addFrameIds(id);
    }
    return b.build();
  }
}
