package dev.frdiag.testing.dumps;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.ring.RecordView;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.ProcessGroupSpec;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import dev.frdiag.testing.sim.Workload;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The simulated job of a {@link FaultyDumps}, run until its fault hung it: every rank's ring as it was then, how
 * PyTorch names the groups, and the ops the dumps must rewrite for the faults the simulator does not model
 * itself. Immutable once built.
 */
final class HungJob {
  /** One op across ranks: a group (simulator name), a kind and a seq. */
  record OpKey(String group, boolean p2p, long seq) {
    boolean matches(CollectiveRecord r) {
      return r.getProcessGroup().equals(group) && r.getIsP2P() == p2p
          && (p2p ? r.getP2PSeq() : r.getCollectiveSeq()) == seq;
    }
  }

  private final int entriesPerRank;
  private final long faultStep;
  private final FlightRecorder[] recorders;
  /** The simulator's group name → PyTorch's (the creation count) and members. */
  private final Map<String, String> names = new HashMap<>();
  private final Map<String, int[]> members = new HashMap<>();
  /** GPU_STALL without timing: the op whose completion the faulty rank's peers saw and it did not. */
  private final OpKey lagging;
  /** DTYPE_MISMATCH: the faulty rank's record to retype, and the tensors its peers issued. */
  private final long retypedRecord;
  private final CollectiveRecord peersTensors;

  /**
   * Runs the job until it hangs.
   *
   * @throws IllegalStateException if it does not hang where the fault should have stopped it
   */
  HungJob(Topology topology, Workload workload, Kind kind, int faultyRank, int entriesPerRank, boolean timing,
      Duration timeout) {
    this.entriesPerRank = entriesPerRank;
    List<ProcessGroupSpec> specs = topology.groups();
    for (int i = 0; i < specs.size(); i++) {
      names.put(specs.get(i).name(), Integer.toString(i));
      members.put(specs.get(i).name(), specs.get(i).ranks());
    }
    // Enough whole steps before the fault that every ring is full and has wrapped, as a real job's has.
    this.faultStep = entriesPerRank / recordsPerStep(topology, workload) + 2;
    AtomicLong ticks = new AtomicLong();
    try (RankSimulator sim = RankSimulator.builder().topology(topology).workload(workload)
        .fault(simulatedFault(kind, faultyRank, faultStep)).recorderCapacity(entriesPerRank)
        .collectiveTimeout(timeout).stepInterval(Duration.ZERO)
        .clock(() -> FaultyDumps.T0 + ticks.getAndIncrement() * FaultyDumps.TICK_NS).build()) {
      sim.runSteps((int) faultStep + 1);
      if (sim.isStalled() == (kind == Kind.NONE)) {
        throw new IllegalStateException(kind == Kind.NONE ? "the healthy simulated job hung"
            : "the simulated job did not hang at step " + faultStep + " (" + kind + ")");
      }
      recorders = new FlightRecorder[topology.worldSize()];
      for (int r = 0; r < recorders.length; r++) {
        recorders[r] = sim.recorder(r);
      }
    }
    lagging = kind == Kind.GPU_STALL && !timing ? oldestIncomplete(faultyRank) : null;
    if (kind == Kind.DTYPE_MISMATCH) {
      CollectiveRecord[] pair = mismatchedRecord(faultyRank);
      retypedRecord = pair[0].getRecordId();
      peersTensors = pair[1];
    } else {
      retypedRecord = -1;
      peersTensors = null;
    }
  }

  /** The 0-based training step at which the job hung. */
  long faultStep() {
    return faultStep;
  }

  FlightRecorder recorder(int rank) {
    return recorders[rank];
  }

  /** PyTorch's name of the simulator's group {@code group}: its creation count. */
  String name(String group) {
    return names.get(group);
  }

  /** The members of the simulator's group {@code group}. */
  int[] members(String group) {
    return members.get(group);
  }

  /** The op the faulty rank's peers saw complete and it did not; null unless GPU_STALL without timing. */
  OpKey lagging() {
    return lagging;
  }

  /** The faulty rank's record to give another dtype; -1 unless DTYPE_MISMATCH. */
  long retypedRecord() {
    return retypedRecord;
  }

  /** A peer's record of the retyped op, whose tensors the retyped record takes; null unless DTYPE_MISMATCH. */
  CollectiveRecord peersTensors() {
    return peersTensors;
  }

  /** The simulator's records of {@code rank}, oldest first, as its ring holds them. */
  List<CollectiveRecord> ring(int rank) {
    FlightRecorder rec = recorders[rank];
    List<CollectiveRecord> out = new ArrayList<>(entriesPerRank);
    RecordView view = new RecordView();
    for (long id = Math.max(0, rec.nextRecordId() - rec.capacity()); id < rec.nextRecordId(); id++) {
      if (rec.read(id, view)) {
        out.add(rec.toProto(view));
      }
    }
    return out;
  }

  private static Fault simulatedFault(Kind kind, int faultyRank, long faultStep) {
    return switch (kind) {
      case NONE -> Fault.none();
      case CPU_STALL, EMPTY_ENTRIES -> Fault.cpuStall(faultyRank, faultStep);
      case GPU_STALL -> Fault.gpuStall(faultyRank, faultStep);
      case FABRIC -> Fault.fabric(faultStep);
      // The simulator halves the size; a dtype mismatch is the same hang with the sizes put back and the
      // dtype changed (see RankDump).
      case SIZE_MISMATCH, DTYPE_MISMATCH -> Fault.mismatch(faultyRank, faultStep);
      case MISSING_FILE -> Fault.deadRank(faultyRank, faultStep);
    };
  }

  /** The fewest records any rank writes per step, from one step of a fault-free job of the same shape. */
  private static int recordsPerStep(Topology topology, Workload workload) {
    try (RankSimulator probe = RankSimulator.builder().topology(topology).workload(workload).recorderCapacity(1)
        .steps(1)
        .stepInterval(Duration.ZERO).clock(new AtomicLong(FaultyDumps.T0)::incrementAndGet).build()) {
      probe.runSteps(1);
      long fewest = Long.MAX_VALUE;
      for (int r = 0; r < topology.worldSize(); r++) {
        fewest = Math.min(fewest, probe.recorder(r).nextRecordId());
      }
      return (int) fewest;
    }
  }

  private OpKey oldestIncomplete(int rank) {
    for (CollectiveRecord r : ring(rank)) {
      if (r.getState() != CollectiveState.COMPLETED) {
        return new OpKey(r.getProcessGroup(), r.getIsP2P(), r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq());
      }
    }
    throw new IllegalStateException("rank " + rank + " has nothing outstanding after a GPU stall");
  }

  /** The faulty rank's mismatched record and a peer's record of the same op. */
  private CollectiveRecord[] mismatchedRecord(int faultyRank) {
    List<CollectiveRecord> mine = ring(faultyRank);
    for (int i = mine.size() - 1; i >= 0; i--) {
      CollectiveRecord r = mine.get(i);
      if (r.getIsP2P() || r.getState() == CollectiveState.COMPLETED) {
        continue;
      }
      OpKey key = new OpKey(r.getProcessGroup(), false, r.getCollectiveSeq());
      for (int peer : members.get(r.getProcessGroup())) {
        if (peer == faultyRank) {
          continue;
        }
        for (CollectiveRecord p : ring(peer)) {
          if (key.matches(p) && p.getOp().equals(r.getOp()) && !p.getInputSizesList().equals(r.getInputSizesList())) {
            return new CollectiveRecord[] {r, p};
          }
        }
        break;
      }
    }
    throw new IllegalStateException("rank " + faultyRank + " issued no mismatched collective");
  }
}
