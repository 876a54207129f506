package dev.frdiag.testing.sim;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.recorder.OpName;
import dev.frdiag.collector.recorder.ProcessGroupHandle;
import dev.frdiag.collector.recorder.StackTrace;
import dev.frdiag.collector.recorder.TensorList;
import dev.frdiag.testing.sim.Workload.Call;
import dev.frdiag.testing.sim.Workload.Role;
import dev.frdiag.testing.sim.Workload.StepOp;
import dev.frdiag.testing.sim.Workload.Tensor;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The deterministic device model behind {@link RankSimulator}: every rank's CPU issuing its step into its
 * recorder, its in-order device stream, and the collectives that complete once all their members started them.
 *
 * <p>Not thread-safe: one thread at a time calls {@link #pass}. A pass lets every rank whose previous step
 * completed issue its next step, then runs the devices until nothing more can start or complete. Completion is
 * counted per collective instance, keyed by (group, seq) as NCCL matches ops by their order on a communicator,
 * so the cost of a pass is proportional to the ops it moves, not to the ranks it could scan.
 */
final class SimulatedJob {
  private static final Logger log = LoggerFactory.getLogger(SimulatedJob.class);
  /** What PyTorch's fused path records for all_reduces issued inside {@code _coalescing_manager}. */
  private static final String FUSED_ALL_REDUCE = "allreduce_coalesced";

  private final Fault fault;
  private final RankState[] ranks;
  private final IntConsumer onDeath;
  private final IntConsumer onFabricFault;
  // Ranks whose device may be able to start its next op; FIFO so the order of events is deterministic.
  private final ArrayDeque<RankState> runnable = new ArrayDeque<>();
  private long changes;
  private boolean fabricAnnounced;
  private long stepsCompleted;
  private final LongSupplier clock;

  /**
   * Registers every rank's process groups with its recorder and interns its ops, tensors and stacks.
   *
   * @param recorders one per rank, indexed by global rank, with no groups registered yet
   * @param onDeath told the global rank of a rank whose process dies (DEAD_RANK), on the calling thread
   * @param onFabricFault told the faulty rank when the fabric fails (FABRIC), on the calling thread
   */
  SimulatedJob(Topology topology, Workload workload, Fault fault, FlightRecorder[] recorders,
      IntConsumer onDeath, IntConsumer onFabricFault) {
    this(topology, workload, fault, recorders, onDeath, onFabricFault, FlightRecorder::epochNanos);
  }

  /** @param clock epoch ns, for when a slow rank may issue its step */
  SimulatedJob(Topology topology, Workload workload, Fault fault, FlightRecorder[] recorders,
      IntConsumer onDeath, IntConsumer onFabricFault, LongSupplier clock) {
    this.clock = clock;
    if (recorders.length != topology.worldSize()) {
      throw new IllegalArgumentException(
          recorders.length + " recorders for a world of " + topology.worldSize() + " ranks");
    }
    this.fault = fault;
    this.onDeath = onDeath;
    this.onFabricFault = onFabricFault;
    Map<String, Group> groups = new HashMap<>();
    for (ProcessGroupSpec spec : topology.groups()) {
      groups.put(spec.name(), new Group(spec));
    }
    ranks = new RankState[topology.worldSize()];
    for (int r = 0; r < ranks.length; r++) {
      ranks[r] = new RankState(r, recorders[r], topology, workload, groups, fault);
    }
  }

  /**
   * Issues the next step on every rank that finished its previous one (and is below {@code stepLimit}), then
   * runs the devices until nothing more moves.
   *
   * @return true when anything was issued, started or completed, or a rank changed state
   */
  boolean pass(long stepLimit) {
    long before = changes;
    List<RankState> issuing = new ArrayList<>();
    for (RankState rank : ranks) {
      if (rank.canIssue() && rank.stepsDone < stepLimit && beginStep(rank)) {
        issuing.add(rank);
      }
    }
    // Real ranks run side by side: issue op by op across ranks (not rank by rank), so issue times compare
    // across ranks the way they would in a real job.
    int longest = 0;
    for (RankState rank : issuing) {
      longest = Math.max(longest, rank.program.length);
    }
    for (int i = 0; i < longest; i++) {
      for (RankState rank : issuing) {
        if (i < rank.program.length) {
          issue(rank, rank.program[i], rank.stepsDone);
        }
      }
    }
    for (RankState rank : issuing) {
      rank.issued = true;
      rank.cursor = 0;
      runnable.add(rank);
    }
    RankState rank;
    while ((rank = runnable.poll()) != null) {
      advance(rank);
    }
    long min = Long.MAX_VALUE;
    for (RankState r : ranks) {
      min = Math.min(min, r.stepsDone);
    }
    stepsCompleted = min;
    return changes != before;
  }

  /** Steps every rank has completed. */
  long stepsCompleted() {
    return stepsCompleted;
  }

  /** Epoch ns when a slow rank may issue the step it holds back; 0 when none holds one back. */
  long wakeAtNanos() {
    long wake = 0;
    for (RankState r : ranks) {
      if (r.slowUntil > 0 && (wake == 0 || r.slowUntil < wake)) {
        wake = r.slowUntil;
      }
    }
    return wake;
  }

  /** Applies the faults that strike at the start of a step; false when the rank issues nothing. */
  private boolean beginStep(RankState rank) {
    long step = rank.stepsDone;
    if (fault.hits(FaultKind.DEAD_RANK, rank.rank, step)) {
      log.info("fault: rank {} dies at the start of step {}", rank.rank, step);
      rank.dead = true;
      changes++;
      onDeath.accept(rank.rank);
      return false;
    }
    if (fault.hits(FaultKind.CPU_STALL, rank.rank, step)) {
      log.info("fault: rank {} stops issuing at step {} (CPU stall)", rank.rank, step);
      rank.cpuStalled = true;
      changes++;
      return false;
    }
    if (fault.kind() == FaultKind.FABRIC && fault.atStep() == step && !fabricAnnounced) {
      log.info("fault: the fabric fails under the world all_reduce of step {}", step);
      fabricAnnounced = true;
      onFabricFault.accept(fault.rank());
    }
    if (fault.kind() == FaultKind.SLOW && fault.rank() == rank.rank && step >= fault.atStep()) {
      long now = clock.getAsLong();
      if (rank.slowUntil == 0) {
        rank.slowUntil = now + fault.delay().toNanos();
      }
      if (now < rank.slowUntil) {
        return false;
      }
      rank.slowUntil = 0;
    }
    if (fault.hits(FaultKind.GPU_STALL, rank.rank, step)) {
      log.info("fault: the device of rank {} starts nothing from step {} on (GPU stall)", rank.rank, step);
      rank.deviceStalledFromStep = step;
    }
    return true;
  }

  private void issue(RankState rank, Unit unit, long step) {
    FlightRecorder recorder = rank.recorder;
    ProcessGroupHandle pg = unit.member.handle;
    boolean mismatched = unit.mismatchTensors != null && fault.hits(FaultKind.MISMATCH, rank.rank, step);
    if (mismatched) {
      log.info("fault: rank {} issues {} on {} with a mismatched size at step {}", rank.rank, unit.ops[0],
          pg.name(), step);
    }
    unit.poisoned = mismatched
        || (unit.role == Role.WORLD_ALL_REDUCE && fault.kind() == FaultKind.FABRIC && fault.atStep() == step);
    unit.started = false;
    if (unit.role == Role.DP_COALESCED) {
      recorder.beginCoalesced(pg, false);
      for (int i = 0; i < unit.ops.length; i++) {
        unit.handles[i] = recorder.enqueue(pg, unit.ops[i], unit.inputs[i], unit.outputs[i], unit.stack);
      }
      unit.handles[unit.ops.length] = recorder.endCoalesced(pg);
      unit.seq = ++unit.member.collectiveSeq;
    } else if (unit.p2p) {
      unit.handles[0] = recorder.enqueueP2p(pg, unit.ops[0], unit.peer, unit.inputs[0], unit.stack);
      unit.seq = ++unit.member.p2pSeq;
    } else {
      TensorList in = mismatched ? unit.mismatchTensors : unit.inputs[0];
      TensorList out = mismatched ? unit.mismatchTensors : unit.outputs[0];
      unit.handles[0] = recorder.enqueue(pg, unit.ops[0], in, out, unit.stack);
      unit.seq = ++unit.member.collectiveSeq;
    }
    changes++;
  }

  /** Starts the rank's next op when its device is free and healthy. */
  private void advance(RankState rank) {
    if (!rank.issued || rank.cursor >= rank.program.length || rank.stepsDone >= rank.deviceStalledFromStep) {
      return;
    }
    Unit unit = rank.program[rank.cursor];
    if (unit.started) {
      return;
    }
    for (long handle : unit.handles) {
      rank.recorder.started(handle);
    }
    unit.started = true;
    changes++;
    Group group = unit.member.group;
    Map<Long, Instance> inFlight = unit.p2p ? group.p2pInFlight : group.collectivesInFlight;
    Instance instance = inFlight.computeIfAbsent(unit.seq, seq -> new Instance(group.spec.size()));
    instance.members[instance.started++] = unit;
    instance.poisoned |= unit.poisoned;
    if (instance.started == instance.members.length && !instance.poisoned) {
      inFlight.remove(unit.seq);
      complete(instance);
    }
  }

  private void complete(Instance instance) {
    for (Unit unit : instance.members) {
      RankState owner = unit.owner;
      for (long handle : unit.handles) {
        owner.recorder.completed(handle);
      }
      owner.cursor++;
      if (owner.cursor == owner.program.length) {
        // The step's last op completed: loss.item() returns and the rank may issue the next step.
        owner.issued = false;
        owner.stepsDone++;
      } else {
        runnable.add(owner);
      }
    }
    changes++;
  }

  /** One process group of the job, with its collectives and P2P ops that some member started. */
  private static final class Group {
    final ProcessGroupSpec spec;
    final Map<Long, Instance> collectivesInFlight = new HashMap<>();
    final Map<Long, Instance> p2pInFlight = new HashMap<>();

    Group(ProcessGroupSpec spec) {
      this.spec = spec;
    }
  }

  /** One collective (or send/recv pair) as the members' devices reach it. */
  private static final class Instance {
    final Unit[] members;
    int started;
    boolean poisoned;

    Instance(int size) {
      members = new Unit[size];
    }
  }

  /** One rank's view of a group: its recorder handle and the order of its ops there. */
  private static final class Membership {
    final Group group;
    final ProcessGroupHandle handle;
    long collectiveSeq;
    long p2pSeq;

    Membership(Group group, ProcessGroupHandle handle) {
      this.group = group;
      this.handle = handle;
    }
  }

  /** One op of a rank's step, interned in its recorder once; its per-step state is reset when issued. */
  private static final class Unit {
    final RankState owner;
    final Role role;
    final Membership member;
    final boolean p2p;
    final int peer;
    final OpName[] ops;
    final TensorList[] inputs;
    final TensorList[] outputs;
    final StackTrace stack;
    /** The mismatched tensors the faulty rank sends instead, or null. */
    final TensorList mismatchTensors;
    /** Records of this op in the current step: one per call, plus the end marker of a coalesced group. */
    final long[] handles;
    long seq;
    boolean started;
    boolean poisoned;

    Unit(RankState owner, StepOp op, Membership member, Map<String, OpName> opNames, boolean mismatch) {
      FlightRecorder recorder = owner.recorder;
      this.owner = owner;
      this.role = op.role();
      this.member = member;
      this.p2p = op.p2p();
      this.peer = op.peer();
      List<Call> calls = op.calls();
      if (op.fused()) {
        // One record for every call, its sizes listing each call's tensor (they share a dtype).
        ops = new OpName[] {opNames.computeIfAbsent(FUSED_ALL_REDUCE, recorder::op)};
        inputs = new TensorList[] {fused(recorder, calls, true)};
        outputs = new TensorList[] {fused(recorder, calls, false)};
      } else {
        ops = new OpName[calls.size()];
        inputs = new TensorList[calls.size()];
        outputs = new TensorList[calls.size()];
        for (int i = 0; i < calls.size(); i++) {
          Call call = calls.get(i);
          ops[i] = opNames.computeIfAbsent(call.op(), recorder::op);
          inputs[i] = tensors(recorder, call.inputs());
          outputs[i] = tensors(recorder, call.outputs());
        }
      }
      stack = recorder.stack(op.stack());
      mismatchTensors = mismatch ? tensors(recorder, calls.get(0).inputs().halved()) : null;
      handles = new long[op.coalesced() ? calls.size() + 1 : calls.size()];
    }

    private static TensorList tensors(FlightRecorder recorder, Tensor tensor) {
      return recorder.tensors(tensor.shapes(), tensor.dtype());
    }

    private static TensorList fused(FlightRecorder recorder, List<Call> calls, boolean inputs) {
      long[][] shapes = new long[calls.size()][];
      String[] dtypes = new String[calls.size()];
      for (int i = 0; i < shapes.length; i++) {
        Tensor t = inputs ? calls.get(i).inputs() : calls.get(i).outputs();
        shapes[i] = t.dims().clone();
        dtypes[i] = t.dtype();
      }
      return recorder.tensors(shapes, dtypes);
    }
  }

  /** One rank: its recorder, its step program, where its CPU and device are. */
  private static final class RankState {
    final int rank;
    final FlightRecorder recorder;
    final Unit[] program;
    /** The current step is issued and not yet completed. */
    boolean issued;
    /** Index of the op the device runs or will run next; the ops before it completed. */
    int cursor;
    long stepsDone;
    long deviceStalledFromStep = Long.MAX_VALUE;
    /** A slow rank holding its step back: epoch ns when it issues it; 0 otherwise. */
    long slowUntil;
    boolean cpuStalled;
    boolean dead;

    RankState(int rank, FlightRecorder recorder, Topology topology, Workload workload, Map<String, Group> groups,
        Fault fault) {
      this.rank = rank;
      this.recorder = recorder;
      Map<String, Membership> memberships = new HashMap<>();
      for (String name : topology.groupNamesOf(rank)) {
        Group group = groups.get(name);
        ProcessGroupHandle handle =
            recorder.registerProcessGroup(name, group.spec.desc(), group.spec.members());
        memberships.put(name, new Membership(group, handle));
      }
      Map<String, OpName> opNames = new HashMap<>();
      List<StepOp> step = workload.stepOf(topology, rank);
      program = new Unit[step.size()];
      boolean mismatchRank = fault.kind() == FaultKind.MISMATCH && fault.rank() == rank;
      for (int i = 0; i < program.length; i++) {
        StepOp op = step.get(i);
        program[i] = new Unit(this, op, memberships.get(op.group()), opNames,
            mismatchRank && op.role() == Role.DP_ALL_REDUCE);
      }
    }

    boolean canIssue() {
      return !issued && !dead && !cpuStalled;
    }
  }
}
