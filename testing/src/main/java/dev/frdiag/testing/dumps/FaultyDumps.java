package dev.frdiag.testing.dumps;

import dev.frdiag.readers.pytorch.DumpVersion;
import dev.frdiag.readers.pytorch.FlightRecorderDump;

import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.ring.RecordView;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.ProcessGroupSpec;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.proto.v1.Symptom;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;

/**
 * The Flight Recorder dumps a hung job would have left, one per rank, as PyTorch writes them: for tests and
 * benchmarks of everything that reads dumps. Not for production use.
 *
 * <p>The job is the {@link RankSimulator} running a Megatron-style step on a {@link Topology} (world, tensor-,
 * pipeline- and data-parallel groups) until an injected fault stops it; each rank's ring is then turned into the
 * dump PyTorch would write:
 *
 * <ul>
 *   <li>groups are named and numbered as {@code new_group} does: names are the job-wide creation count
 *       ({@code "0"} is the default group), {@code pg_id} counts the groups the rank is a member of, in creation
 *       order; {@code pg_config} lists the members;
 *   <li>{@code collective_seq_id} counts collectives per group (one per coalesced group), {@code p2p_seq_id}
 *       counts each rank's own sends and recvs per group, {@code op_id} every op of the group;
 *   <li>{@code pg_status} holds, per group, the seqs of the last work of either kind, as
 *       {@code ProcessGroupNCCL} does: a group used only for sends and recvs reports P2P seqs there;
 *   <li>without timing ({@code TORCH_NCCL_ENABLE_TIMING}, off by default) there is no {@code started} state, no
 *       start time, no {@code duration_ms} and {@code last_started_collective} is -1; with it, all of them;
 *   <li>completed entries are retired; with only-active ({@code TORCH_INCLUDE_ONLY_ACTIVE}) they are left out;
 *   <li>stack frames, when asked for, are deduplicated across entries as PyTorch's symbolizer does.
 * </ul>
 *
 * <p>Instances are immutable once built and thread-safe; each {@link #dump} is computed on demand from the
 * simulated rings, so a 512-rank, 2000-entry job is written without holding every dump in memory.
 */
public final class FaultyDumps {
  public static final int DEFAULT_RANKS = 64;
  /** PyTorch's default ring size. */
  public static final int DEFAULT_ENTRIES_PER_RANK = FlightRecorder.DEFAULT_CAPACITY;
  /** The format version of the real dumps in the samples: {@code nccl_version}, thread fields. */
  public static final String DEFAULT_VERSION = "2.9";
  public static final long DEFAULT_SEED = 1;
  /** What {@code timeout_ms} says: PyTorch's default process-group timeout. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(10);

  /** When the simulated job started, in epoch ns (that of the real samples), and how far each event moves on. */
  static final long T0 = 1_758_610_505_880_883_597L;
  static final long TICK_NS = 25_000;
  /** What the training loop's thread is called since PyTorch names it, and a pthread id of the kind it prints. */
  static final String THREAD_NAME = "pt_main_thread";
  static final long THREAD_ID_BASE = 139_872_412_340_000L;
  static final String NCCL_VERSION = "2.27.3";

  /** What goes wrong, as the dumps show it. */
  public enum Kind {
    /** The faulty rank's CPU never issues the step: its ring ends at the previous step while peers wait. */
    CPU_STALL(Symptom.CPU_STALL),
    /**
     * The faulty rank issues the step but its device runs none of it. With timing its entries stay
     * {@code scheduled} while its peers' are {@code started}; without, its first op stays {@code scheduled}
     * while its peers completed it (its device stopped reporting, as after an Xid).
     */
    GPU_STALL(Symptom.GPU_STALL),
    /** Every rank started the step's world all_reduce and none completed it; no rank is at fault. */
    FABRIC(Symptom.FABRIC),
    /** The faulty rank issued the step's data-parallel all_reduce with its first dimension halved. */
    SIZE_MISMATCH(Symptom.MISMATCH),
    /** The faulty rank issued the step's data-parallel all_reduce with another dtype. */
    DTYPE_MISMATCH(Symptom.MISMATCH),
    /** The faulty rank died at the start of the step and left no dump file. */
    MISSING_FILE(Symptom.DEAD_RANK),
    /**
     * The faulty rank's CPU never issues the step and its dump has no entries at all, only {@code pg_status}:
     * what a rank whose Python thread is wedged (holding the GIL) dumps.
     */
    EMPTY_ENTRIES(Symptom.CPU_STALL);

    private final Symptom symptom;

    Kind(Symptom symptom) {
      this.symptom = symptom;
    }

    /** The symptom a correct diagnosis names. */
    public Symptom symptom() {
      return symptom;
    }
  }

  private final Topology topology;
  private final Kind kind;
  private final int faultyRank;
  private final long faultStep;
  private final int entriesPerRank;
  private final boolean timing;
  private final boolean onlyActive;
  private final int stackDepth;
  private final String version;
  private final long seed;
  private final long timeoutMs;
  private final FlightRecorder[] recorders;
  /** The simulator's group name → PyTorch's (the creation count) and members. */
  private final Map<String, String> names = new HashMap<>();
  private final Map<String, int[]> members = new HashMap<>();
  /** GPU_STALL without timing: the op whose completion the faulty rank's peers saw and it did not. */
  private final OpKey lagging;
  /** DTYPE_MISMATCH: the faulty rank's record to retype, and the tensors its peers issued. */
  private final long retypedRecord;
  private final CollectiveRecord peersTensors;

  /** One op across ranks: a group (simulator name), a kind and a seq. */
  private record OpKey(String group, boolean p2p, long seq) {
    boolean matches(CollectiveRecord r) {
      return r.getProcessGroup().equals(group) && r.getIsP2P() == p2p
          && (p2p ? r.getP2PSeq() : r.getCollectiveSeq()) == seq;
    }
  }

  private FaultyDumps(Builder b) {
    this.topology = b.topology;
    this.kind = b.kind;
    this.faultyRank = kind == Kind.FABRIC ? -1 : b.faultyRank;
    this.entriesPerRank = b.entriesPerRank;
    this.timing = b.timing;
    this.onlyActive = b.onlyActive;
    this.stackDepth = b.stackDepth;
    this.version = b.version;
    this.seed = b.seed;
    this.timeoutMs = b.timeout.toMillis();
    List<ProcessGroupSpec> specs = topology.groups();
    for (int i = 0; i < specs.size(); i++) {
      names.put(specs.get(i).name(), Integer.toString(i));
      members.put(specs.get(i).name(), specs.get(i).ranks());
    }
    // Enough whole steps before the fault that every ring is full and has wrapped, as a real job's has.
    this.faultStep = entriesPerRank / recordsPerStep(topology) + 2;
    AtomicLong ticks = new AtomicLong();
    try (RankSimulator sim = RankSimulator.builder().topology(topology).fault(simulatedFault())
        .recorderCapacity(entriesPerRank).collectiveTimeout(b.timeout).stepInterval(Duration.ZERO)
        .clock(() -> T0 + ticks.getAndIncrement() * TICK_NS).build()) {
      sim.runSteps((int) faultStep + 1);
      if (!sim.isStalled()) {
        throw new IllegalStateException("the simulated job did not hang at step " + faultStep + " (" + kind + ")");
      }
      recorders = new FlightRecorder[topology.worldSize()];
      for (int r = 0; r < recorders.length; r++) {
        recorders[r] = sim.recorder(r);
      }
    }
    lagging = kind == Kind.GPU_STALL && !timing ? oldestIncomplete(faultyRank) : null;
    if (kind == Kind.DTYPE_MISMATCH) {
      CollectiveRecord[] pair = mismatchedRecord();
      retypedRecord = pair[0].getRecordId();
      peersTensors = pair[1];
    } else {
      retypedRecord = -1;
      peersTensors = null;
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  public Topology topology() {
    return topology;
  }

  public int worldSize() {
    return topology.worldSize();
  }

  public Kind kind() {
    return kind;
  }

  /** The rank the fault was injected on; -1 for {@link Kind#FABRIC}. */
  public int faultyRank() {
    return faultyRank;
  }

  /** The 0-based training step at which the job hung. */
  public long faultStep() {
    return faultStep;
  }

  /** The ranks a correct diagnosis names: the faulty rank, or none for a fabric fault. */
  public List<Integer> culprits() {
    return faultyRank < 0 ? List.of() : List.of(faultyRank);
  }

  /** The symptom a correct diagnosis names. */
  public Symptom symptom() {
    return kind.symptom();
  }

  /** Whether the dumps carry start events ({@code TORCH_NCCL_ENABLE_TIMING=1}). */
  public boolean timing() {
    return timing;
  }

  /** The ranks that left a dump file, ascending. */
  public List<Integer> ranksWithDumps() {
    return IntStream.range(0, worldSize()).filter(r -> !(kind == Kind.MISSING_FILE && r == faultyRank)).boxed()
        .toList();
  }

  /**
   * The dump {@code rank} left, named {@code _dump_<rank>}; empty for the rank of {@link Kind#MISSING_FILE}.
   *
   * @throws IllegalArgumentException if {@code rank} is not in the job
   */
  public Optional<FlightRecorderDump> dump(int rank) {
    topology.checkRank(rank);
    if (kind == Kind.MISSING_FILE && rank == faultyRank) {
      return Optional.empty();
    }
    return Optional.of(new RankDump(rank).build());
  }

  /**
   * Writes every dump into {@code dir} as {@code <prefix><rank>} (plus {@code .json} for JSON), in an order
   * and with modification times shuffled by the seed, so nothing can rely on either.
   *
   * @return the files written, in the order they were written
   * @throws IOException if writing fails
   */
  public List<Path> write(Path dir, String prefix, Encoding encoding) throws IOException {
    Objects.requireNonNull(dir, "dir");
    Objects.requireNonNull(prefix, "prefix");
    Objects.requireNonNull(encoding, "encoding");
    Files.createDirectories(dir);
    Random random = new Random(seed);
    List<Integer> order = new ArrayList<>(ranksWithDumps());
    Collections.shuffle(order, random);
    List<Integer> mtimes = new ArrayList<>(order);
    Collections.shuffle(mtimes, random);
    long base = T0 / 1_000_000;
    List<Path> written = new ArrayList<>(order.size());
    for (int i = 0; i < order.size(); i++) {
      Path file = DumpWriter.write(dump(order.get(i)).orElseThrow(), dir, prefix, encoding);
      Files.setLastModifiedTime(file, FileTime.fromMillis(base + mtimes.get(i) * 1_000L));
      written.add(file);
    }
    return written;
  }

  private Fault simulatedFault() {
    return switch (kind) {
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
  private static int recordsPerStep(Topology topology) {
    try (RankSimulator probe = RankSimulator.builder().topology(topology).recorderCapacity(1).steps(1)
        .stepInterval(Duration.ZERO).clock(new AtomicLong(T0)::incrementAndGet).build()) {
      probe.runSteps(1);
      long fewest = Long.MAX_VALUE;
      for (int r = 0; r < topology.worldSize(); r++) {
        fewest = Math.min(fewest, probe.recorder(r).nextRecordId());
      }
      return (int) fewest;
    }
  }

  /** The simulator's records of {@code rank}, oldest first, as its ring holds them. */
  private List<CollectiveRecord> ring(int rank) {
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

  private OpKey oldestIncomplete(int rank) {
    for (CollectiveRecord r : ring(rank)) {
      if (r.getState() != CollectiveState.COMPLETED) {
        return new OpKey(r.getProcessGroup(), r.getIsP2P(), r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq());
      }
    }
    throw new IllegalStateException("rank " + rank + " has nothing outstanding after a GPU stall");
  }

  /** The faulty rank's mismatched record and a peer's record of the same op. */
  private CollectiveRecord[] mismatchedRecord() {
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

  /** Builds one rank's dump from its ring. */
  private final class RankDump {
    private final int rank;
    private final FlightRecorder rec;
    private final DumpVersion dumpVersion = DumpVersion.parse(version);
    private final Map<Frame, Integer> frameIds = new HashMap<>();
    private final Map<Integer, Frame> frames = new LinkedHashMap<>();
    /** Recorder stack id (-1 for none) → the entry's frame ids in the dump. */
    private final Map<Integer, List<Integer>> stacks = new HashMap<>();
    /** Per simulator group name: the kind of the newest record, the highest P2P seq the device started. */
    private final Map<String, Boolean> newestIsP2p = new HashMap<>();
    private final Map<String, Long> p2pStarted = new HashMap<>();

    RankDump(int rank) {
      this.rank = rank;
      this.rec = recorders[rank];
    }

    FlightRecorderDump build() {
      List<CollectiveRecord> records = new ArrayList<>(entriesPerRank);
      boolean peerOfLagging = lagging != null && rank != faultyRank && contains(members.get(lagging.group()), rank);
      for (CollectiveRecord r : ring(rank)) {
        newestIsP2p.put(r.getProcessGroup(), r.getIsP2P());
        if (r.getIsP2P() && r.getState() != CollectiveState.SCHEDULED) {
          p2pStarted.merge(r.getProcessGroup(), r.getP2PSeq(), Math::max);
        }
        CollectiveRecord.Builder b = r.toBuilder();
        if (peerOfLagging && lagging.matches(r)) {
          // Its peers saw the op complete; only the faulty rank's watchdog never did.
          b.setState(CollectiveState.COMPLETED).setTimeCompletedNs(r.getTimeCreatedNs() + 40 * TICK_NS);
        }
        if (r.getRecordId() == retypedRecord && rank == faultyRank) {
          retype(b);
        }
        if (!timing) {
          b.setTimeStartedNs(0);
          if (b.getState() == CollectiveState.STARTED) {
            b.setState(CollectiveState.SCHEDULED);
          }
        } else if (b.getState() == CollectiveState.COMPLETED) {
          b.setDurationMs((b.getTimeCompletedNs() - b.getTimeStartedNs()) / 1e6);
        }
        boolean completed = b.getState() == CollectiveState.COMPLETED;
        if (onlyActive && completed || kind == Kind.EMPTY_ENTRIES && rank == faultyRank) {
          continue;
        }
        String name = names.get(r.getProcessGroup());
        int[] ranks = members.get(r.getProcessGroup());
        long seq = r.getIsP2P() ? r.getP2PSeq() : r.getCollectiveSeq();
        b.setProcessGroup(name).setRetired(completed)
            .setCommsId(CommsId.of(name, seq, r.getIsP2P(), CommsId.layoutOf(ranks)));
        if (dumpVersion.atLeast(DumpVersion.THREAD_FIELDS)) {
          b.setThreadName(THREAD_NAME).setThreadId(Long.toString(THREAD_ID_BASE + rank));
        } else {
          b.clearThreadName().clearThreadId();
        }
        List<Integer> ids = frameIdsOf(r);
        b.clearFrameIds().addAllFrameIds(ids);
        records.add(b.build());
      }
      return new FlightRecorderDump(Path.of("_dump_" + rank), rank, version,
          dumpVersion.atLeast(DumpVersion.NCCL_VERSION_KEY) ? NCCL_VERSION : "", groups(), records, status(),
          frames, List.of());
    }

    private void retype(CollectiveRecord.Builder b) {
      List<Shape> in = peersTensors.getInputSizesList();
      List<Shape> out = peersTensors.getOutputSizesList();
      List<String> dtypes = peersTensors.getInputDtypesList().stream().map(FaultyDumps::otherDtype).toList();
      b.clearInputSizes().addAllInputSizes(in).clearOutputSizes().addAllOutputSizes(out)
          .clearInputDtypes().addAllInputDtypes(dtypes).clearOutputDtypes().addAllOutputDtypes(dtypes);
    }

    /** The groups as the reader gives them back: in {@code pg_config} order (by name), with pg_id. */
    private List<ProcessGroup> groups() {
      List<ProcessGroup> out = new ArrayList<>();
      for (ProcessGroup g : rec.processGroups()) {
        out.add(g.toBuilder().setName(names.get(g.getName())).build());
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
        if (lagging != null && lagging.group().equals(group) && rank != faultyRank
            && contains(members.get(group), rank) && lagging.p2p() == p2p) {
          completed = Math.max(completed, lagging.seq());
        }
        long started = !timing ? -1
            : p2p ? Math.max(completed, p2pStarted.getOrDefault(group, -1L)) : p.getLastStartedSeq();
        out.add(ProcessGroupProgress.newBuilder().setProcessGroup(names.get(group)).setLastEnqueuedSeq(enqueued)
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

  /**
   * The Python frames a Megatron training step runs inside, innermost first: module calls through the model's
   * layers, the schedule, the training loop and the launcher. Synthetic, and deterministic.
   */
  static final class OuterFrames {
    private static final List<Frame> FRAMES = build();

    private OuterFrames() {}

    /** Frame {@code i}, cycling when a stack is deeper than the list. */
    static Frame get(int i) {
      return FRAMES.get(i % FRAMES.size());
    }

    private static List<Frame> build() {
      List<Frame> out = new ArrayList<>();
      for (int layer = 0; layer < 24; layer++) {
        out.add(frame("_call_impl", "torch/nn/modules/module.py", 1762));
        out.add(frame("_wrapped_call_impl", "torch/nn/modules/module.py", 1751));
        out.add(frame("forward", "megatron/core/transformer/transformer_block.py", 549 + layer));
      }
      out.add(frame("forward", "megatron/core/models/gpt/gpt_model.py", 303));
      out.add(frame("forward_step", "pretrain_gpt.py", 207));
      out.add(frame("forward_step", "megatron/core/pipeline_parallel/schedules.py", 277));
      out.add(frame("forward_backward_pipelining_without_interleaving",
          "megatron/core/pipeline_parallel/schedules.py", 1847));
      out.add(frame("train_step", "megatron/training/training.py", 1178));
      out.add(frame("train", "megatron/training/training.py", 2094));
      out.add(frame("pretrain", "megatron/training/training.py", 386));
      out.add(frame("<module>", "pretrain_gpt.py", 276));
      out.add(frame("_run_code", "<frozen runpy>", 88));
      out.add(frame("_run_module_as_main", "<frozen runpy>", 198));
      return List.copyOf(out);
    }

    private static Frame frame(String name, String file, int line) {
      return Frame.newBuilder().setName(name).setFilename(file).setLine(line).build();
    }
  }

  /** Configures a {@link FaultyDumps}; {@link #build} runs the simulation. */
  public static final class Builder {
    private Topology topology = topologyFor(DEFAULT_RANKS);
    private Kind kind = Kind.CPU_STALL;
    private int faultyRank = -1;
    private int entriesPerRank = DEFAULT_ENTRIES_PER_RANK;
    private boolean timing;
    private boolean onlyActive;
    private int stackDepth;
    private String version = DEFAULT_VERSION;
    private long seed = DEFAULT_SEED;
    private Duration timeout = DEFAULT_TIMEOUT;

    private Builder() {}

    /**
     * A job of {@code ranks} ranks on hosts of 8, laid out as Megatron would: tensor-parallel 4 and 2 pipeline
     * stages below 256 ranks, tensor-parallel 8 and 4 stages from 256 on; the rest is data-parallel.
     *
     * @throws IllegalArgumentException if that layout does not divide {@code ranks}; use {@link #topology}
     */
    public Builder ranks(int ranks) {
      this.topology = topologyFor(ranks);
      return this;
    }

    /** Any other layout. */
    public Builder topology(Topology topology) {
      this.topology = Objects.requireNonNull(topology, "topology");
      return this;
    }

    /**
     * The fault and the rank it strikes ({@code rank} is ignored for {@link Kind#FABRIC}).
     *
     * @throws IllegalArgumentException if {@code rank} is negative for a fault that needs one
     */
    public Builder fault(Kind kind, int rank) {
      this.kind = Objects.requireNonNull(kind, "kind");
      if (kind != Kind.FABRIC && rank < 0) {
        throw new IllegalArgumentException("a " + kind + " fault needs a rank, got " + rank);
      }
      this.faultyRank = rank;
      return this;
    }

    /** Entries each rank's ring holds ({@code TORCH_FR_BUFFER_SIZE}); 2000 by default. */
    public Builder entriesPerRank(int entries) {
      if (entries < 1) {
        throw new IllegalArgumentException("entriesPerRank must be at least 1, got " + entries);
      }
      this.entriesPerRank = entries;
      return this;
    }

    /** Whether the job ran with {@code TORCH_NCCL_ENABLE_TIMING=1} (start events); off by default, as in PyTorch. */
    public Builder timing(boolean on) {
      this.timing = on;
      return this;
    }

    /** Whether the dumps hold only entries not completed ({@code TORCH_INCLUDE_ONLY_ACTIVE=1}); off by default. */
    public Builder onlyActive(boolean on) {
      this.onlyActive = on;
      return this;
    }

    /** Stack frames per entry; 0 (the default) dumps none, as {@code includeStackTraces=False} does. */
    public Builder stackDepth(int frames) {
      if (frames < 0 || frames > 256) {
        throw new IllegalArgumentException("stackDepth must be in 0..256, got " + frames);
      }
      this.stackDepth = frames;
      return this;
    }

    /**
     * The dump format version, "2.2" to "2.10"; "2.9" by default.
     *
     * @throws IllegalArgumentException if the writer and reader do not know it
     */
    public Builder version(String version) {
      DumpVersion v = DumpVersion.parse(Objects.requireNonNull(version, "version"));
      if (v == null || !v.atLeast(DumpVersion.OLDEST) || !DumpVersion.NEWEST.atLeast(v)) {
        throw new IllegalArgumentException("version must be " + DumpVersion.OLDEST + " to " + DumpVersion.NEWEST
            + ", got '" + version + "'");
      }
      this.version = version;
      return this;
    }

    /** Shuffles the order and modification times files are written with. */
    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /** The process-group timeout entries record. */
    public Builder timeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("timeout must be positive, got " + timeout);
      }
      this.timeout = timeout;
      return this;
    }

    /**
     * Runs the simulated job until it hangs.
     *
     * @throws IllegalArgumentException if the fault's rank is outside the job, or a mismatch has no data-parallel
     *     group of at least 3 ranks (with two, no majority says which rank is the odd one)
     */
    public FaultyDumps build() {
      if (kind != Kind.FABRIC) {
        topology.checkRank(faultyRank);
      }
      if ((kind == Kind.SIZE_MISMATCH || kind == Kind.DTYPE_MISMATCH) && topology.dataParallel() < 3) {
        throw new IllegalArgumentException("a " + kind + " needs data-parallel groups of at least 3 ranks, the "
            + "topology has " + topology.dataParallel());
      }
      return new FaultyDumps(this);
    }

    private static Topology topologyFor(int ranks) {
      boolean large = ranks >= 256;
      return Topology.builder().worldSize(ranks).ranksPerHost(Math.min(8, ranks)).tensorParallel(large ? 8 : 4)
          .pipelineStages(large ? 4 : 2).build();
    }
  }
}
