package dev.frdiag.testing.dumps;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.readers.pytorch.DumpVersion;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import dev.frdiag.testing.sim.Workload;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Random;
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
    /** Nothing: the dumps of a healthy job taken after a step, every entry completed. */
    NONE(Symptom.SYMPTOM_UNSPECIFIED),
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
  private final int entriesPerRank;
  private final boolean timing;
  private final boolean onlyActive;
  private final int stackDepth;
  private final String version;
  private final long seed;
  private final Workload workload;
  private final HungJob job;

  private FaultyDumps(Builder b) {
    this.topology = b.topology;
    this.kind = b.kind;
    this.faultyRank = kind == Kind.FABRIC || kind == Kind.NONE ? -1 : b.faultyRank;
    this.entriesPerRank = b.entriesPerRank;
    this.timing = b.timing;
    this.onlyActive = b.onlyActive;
    this.stackDepth = b.stackDepth;
    this.version = b.version;
    this.seed = b.seed;
    this.workload = b.workload;
    this.job = new HungJob(topology, workload, kind, faultyRank, entriesPerRank, timing, b.timeout);
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

  /** What every rank issues per step. */
  public Workload workload() {
    return workload;
  }

  /** The rank the fault was injected on; -1 for {@link Kind#FABRIC} and {@link Kind#NONE}. */
  public int faultyRank() {
    return faultyRank;
  }

  /** The 0-based training step at which the job hung. */
  public long faultStep() {
    return job.faultStep();
  }

  /** The ranks a correct diagnosis names: the faulty rank, or none for a fabric fault or a healthy job. */
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
    return Optional.of(new RankDump(this, job, rank).build());
  }

  /** Entries each rank's ring holds. */
  int entriesPerRank() {
    return entriesPerRank;
  }

  /** Whether completed entries are left out ({@code TORCH_INCLUDE_ONLY_ACTIVE=1}). */
  boolean onlyActive() {
    return onlyActive;
  }

  /** Stack frames per entry; 0 for none. */
  int stackDepth() {
    return stackDepth;
  }

  /** The dump format version. */
  String version() {
    return version;
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
    private Workload workload = Workload.defaults();

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

    /** What every rank issues per step; {@link Workload#defaults()} unless given. */
    public Builder workload(Workload workload) {
      this.workload = Objects.requireNonNull(workload, "workload");
      return this;
    }

    /**
     * The fault and the rank it strikes ({@code rank} is ignored for {@link Kind#FABRIC} and {@link Kind#NONE}).
     *
     * @throws IllegalArgumentException if {@code rank} is negative for a fault that needs one
     */
    public Builder fault(Kind kind, int rank) {
      this.kind = Objects.requireNonNull(kind, "kind");
      if (kind != Kind.FABRIC && kind != Kind.NONE && rank < 0) {
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
      if (kind != Kind.FABRIC && kind != Kind.NONE) {
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
