package dev.frdiag.testing.dumps;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.readers.pytorch.DumpVersion;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds one rank's dump from its ring in the hung job: names and numbers its groups as PyTorch does, rewrites the
 * records a fault the simulator does not model itself would have changed, drops what the dump's settings leave
 * out, and interns stack frames. One instance per dump; not thread-safe.
 */
final class RankDump {
  private final int rank;
  private final FlightRecorder rec;
  private final FaultyDumps dumps;
  private final HungJob job;
  private final DumpVersion dumpVersion;
  private final Map<Frame, Integer> frameIds = new HashMap<>();
  private final Map<Integer, Frame> frames = new LinkedHashMap<>();
  /** Recorder stack id (-1 for none) → the entry's frame ids in the dump. */
  private final Map<Integer, List<Integer>> stacks = new HashMap<>();
  /** Per simulator group name: the kind of the newest record, the highest P2P seq the device started. */
  private final Map<String, Boolean> newestIsP2p = new HashMap<>();
  private final Map<String, Long> p2pStarted = new HashMap<>();

  RankDump(FaultyDumps dumps, HungJob job, int rank) {
    this.dumps = dumps;
    this.job = job;
    this.rank = rank;
    this.rec = job.recorder(rank);
    this.dumpVersion = DumpVersion.parse(dumps.version());
  }

  FlightRecorderDump build() {
    List<CollectiveRecord> records = new ArrayList<>(dumps.entriesPerRank());
    HungJob.OpKey lagging = job.lagging();
    int faultyRank = dumps.faultyRank();
    boolean peerOfLagging = lagging != null && rank != faultyRank && contains(job.members(lagging.group()), rank);
    for (CollectiveRecord r : job.ring(rank)) {
      newestIsP2p.put(r.getProcessGroup(), r.getIsP2P());
      if (r.getIsP2P() && r.getState() != CollectiveState.SCHEDULED) {
        p2pStarted.merge(r.getProcessGroup(), r.getP2PSeq(), Math::max);
      }
      CollectiveRecord.Builder b = r.toBuilder();
      if (peerOfLagging && lagging.matches(r)) {
        // Its peers saw the op complete; only the faulty rank's watchdog never did.
        b.setState(CollectiveState.COMPLETED).setTimeCompletedNs(r.getTimeCreatedNs() + 40 * FaultyDumps.TICK_NS);
      }
      if (r.getRecordId() == job.retypedRecord() && rank == faultyRank) {
        retype(b);
      }
      if (!dumps.timing()) {
        b.setTimeStartedNs(0);
        if (b.getState() == CollectiveState.STARTED) {
          b.setState(CollectiveState.SCHEDULED);
        }
      } else if (b.getState() == CollectiveState.COMPLETED) {
        b.setDurationMs((b.getTimeCompletedNs() - b.getTimeStartedNs()) / 1e6);
      }
      boolean completed = b.getState() == CollectiveState.COMPLETED;
      if (dumps.onlyActive() && completed || dumps.kind() == FaultyDumps.Kind.EMPTY_ENTRIES && rank == faultyRank) {
        continue;
      }
      String name = job.name(r.getProcessGroup());
      int[] ranks = job.members(r.getProcessGroup());
      long seq = r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq();
      b.setProcessGroup(name).setRetired(completed)
          .setCommsId(CommsId.of(name, seq, r.getIsP2P(), CommsId.layoutOf(ranks)));
      if (dumpVersion.atLeast(DumpVersion.THREAD_FIELDS)) {
        b.setThreadName(FaultyDumps.THREAD_NAME).setThreadId(Long.toString(FaultyDumps.THREAD_ID_BASE + rank));
      } else {
        b.clearThreadName().clearThreadId();
      }
      List<Integer> ids = frameIdsOf(r);
      b.clearFrameIds().addAllFrameIds(ids);
      records.add(b.build());
    }
    return new FlightRecorderDump(Path.of("_dump_" + rank), rank, dumps.version(),
        dumpVersion.atLeast(DumpVersion.NCCL_VERSION_KEY) ? FaultyDumps.NCCL_VERSION : "", groups(), records, status(),
        frames, List.of());
  }

  private void retype(CollectiveRecord.Builder b) {
    CollectiveRecord peersTensors = job.peersTensors();
    List<Shape> in = peersTensors.getInputSizesList();
    List<Shape> out = peersTensors.getOutputSizesList();
    List<String> dtypes = peersTensors.getInputDtypesList().stream().map(RankDump::otherDtype).toList();
    b.clearInputSizes().addAllInputSizes(in).clearOutputSizes().addAllOutputSizes(out)
        .clearInputDtypes().addAllInputDtypes(dtypes).clearOutputDtypes().addAllOutputDtypes(dtypes);
  }

  /** The groups as the reader gives them back: in {@code pg_config} order (by name), with pg_id. */
  private List<ProcessGroup> groups() {
    List<ProcessGroup> out = new ArrayList<>();
    for (ProcessGroup g : rec.processGroups()) {
      out.add(g.toBuilder().setName(job.name(g.getName())).build());
    }
    out.sort((a, c) -> a.getName().compareTo(c.getName()));
    return out;
  }

  /** PyTorch's pg_status: per group, the seqs of its last work of either kind; ordered by pg_id. */
  private List<ProcessGroupProgress> status() {
    List<ProcessGroupProgress> out = new ArrayList<>();
    for (ProcessGroupProgress p : rec.progress()) {
      String group = p.getProcessGroup();
      boolean p2p = newestIsP2p.getOrDefault(group, p.getLastEnqueuedSeq() < 0);
      long enqueued = p2p ? p.getLastEnqueuedP2PSeq() : p.getLastEnqueuedSeq();
      long completed = p2p ? p.getLastCompletedP2PSeq() : p.getLastCompletedSeq();
      HungJob.OpKey lagging = job.lagging();
      if (lagging != null && lagging.group().equals(group) && rank != dumps.faultyRank()
          && contains(job.members(group), rank) && lagging.p2p() == p2p) {
        completed = Math.max(completed, lagging.seq());
      }
      long started = !dumps.timing() ? -1
          : p2p ? Math.max(completed, p2pStarted.getOrDefault(group, -1L)) : p.getLastStartedSeq();
      out.add(ProcessGroupProgress.newBuilder().setProcessGroup(job.name(group)).setLastEnqueuedSeq(enqueued)
          .setLastStartedSeq(started).setLastCompletedSeq(completed).setLastEnqueuedP2PSeq(-1)
          .setLastCompletedP2PSeq(-1).build());
    }
    return out;
  }

  /**
   * The entry's stack, innermost first: the op's own frames, then the frames of the training loop around
   * it, {@code stackDepth} in all; none when stacks are off.
   */
  private List<Integer> frameIdsOf(CollectiveRecord r) {
    int stackDepth = dumps.stackDepth();
    if (stackDepth == 0) {
      return List.of();
    }
    int stack = r.getFrameIdsCount() == 0 ? -1 : FlightRecorder.stackOfFrame(r.getFrameIds(0));
    return stacks.computeIfAbsent(stack, s -> {
      List<Frame> chain = new ArrayList<>(stackDepth);
      for (int id : r.getFrameIdsList()) {
        chain.add(rec.frame(id));
      }
      for (int i = 0; chain.size() < stackDepth; i++) {
        chain.add(OuterFrames.get(i));
      }
      List<Integer> ids = new ArrayList<>(stackDepth);
      for (Frame f : chain.subList(0, stackDepth)) {
        ids.add(frameIds.computeIfAbsent(f, x -> {
          int id = frames.size();
          frames.put(id, x);
          return id;
        }));
      }
      return List.copyOf(ids);
    });
  }

  private static boolean contains(int[] ranks, int rank) {
    for (int r : ranks) {
      if (r == rank) {
        return true;
      }
    }
    return false;
  }

  private static String otherDtype(String dtype) {
    return dtype.equals("Float") ? "BFloat16" : "Float";
  }
}
