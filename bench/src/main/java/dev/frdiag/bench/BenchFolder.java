package dev.frdiag.bench;

import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import dev.frdiag.testing.sim.Topology;
import dev.frdiag.testing.sim.Workload;
import dev.frdiag.testing.sim.Workload.Gradients;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/**
 * The dump folders the benchmarks of {@code fr-diagnose analyze} run on: 2,000 entries per rank (PyTorch's default
 * ring, wrapped) with 73-frame stacks, in the layouts real jobs run. The first rows stand for a hang at the end of
 * a ring that PyTorch's own analyzer matches whole: tensor- and data-parallel groups or FSDP-like world-group
 * collectives, every rank issuing the same ops per step (so their record ids line up), gradients through the fused
 * {@code allreduce_coalesced} PyTorch records for {@code _coalescing_manager}. The {@code analyze-*} rows are
 * {@link AnalyzeBench}'s: a GPU stall under a Megatron layout whose gradients are recorded as coalesced groups,
 * where that analyzer gives up early.
 */
enum BenchFolder {
  DP_TP_64("dp-tp-64", "64 ranks, data-parallel groups of 8 + tensor-parallel 8, one rank never issued its last step",
      64, 8, 1, false, Kind.CPU_STALL),
  WORLD_TP_64("world-tp-64", "64 ranks, world-group collectives (FSDP-like) + tensor-parallel 8, the same fault",
      64, 8, 1, true, Kind.CPU_STALL),
  DP_TP_512("dp-tp-512", "512 ranks, data-parallel groups of 64 + tensor-parallel 8, the same fault",
      512, 8, 1, false, Kind.CPU_STALL),
  WORLD_TP_512("world-tp-512", "512 ranks, world-group collectives + tensor-parallel 8, no hang",
      512, 8, 1, true, Kind.NONE),
  MEGATRON_64("megatron-64", "64 ranks, Megatron tensor-parallel 4, 2 pipeline stages, data/expert-parallel 8, "
      + "the same fault", 64, 4, 2, false, Kind.CPU_STALL),
  ANALYZE_64("analyze-64", "AnalyzeBench's 64 ranks: Megatron tp 4, pp 2, coalesced gradient groups, a GPU stall",
      64, 0, 0, false, Kind.GPU_STALL),
  ANALYZE_512("analyze-512", "AnalyzeBench's 512 ranks: Megatron tp 8, pp 4, the same", 512, 0, 0, false,
      Kind.GPU_STALL);

  /** The rows FrTraceBench runs unless told which; {@link #MEGATRON_64} is run when named. */
  static final List<BenchFolder> DEFAULT_ROWS = List.of(DP_TP_64, WORLD_TP_64, DP_TP_512, WORLD_TP_512,
      ANALYZE_64, ANALYZE_512);

  static final int ENTRIES = AnalyzeBench.ENTRIES;
  static final int STACK_DEPTH = AnalyzeBench.STACK_DEPTH;

  final String id;
  final String description;
  final int ranks;
  private final int tensorParallel;
  private final int pipelineStages;
  private final boolean shardedOverWorld;
  private final Kind kind;

  BenchFolder(String id, String description, int ranks, int tensorParallel, int pipelineStages,
      boolean shardedOverWorld, Kind kind) {
    this.id = id;
    this.description = description;
    this.ranks = ranks;
    this.tensorParallel = tensorParallel;
    this.pipelineStages = pipelineStages;
    this.shardedOverWorld = shardedOverWorld;
    this.kind = kind;
  }

  /** The row called {@code id}, or a usage error listing them all. */
  static BenchFolder of(String id) {
    for (BenchFolder f : values()) {
      if (f.id.equals(id)) {
        return f;
      }
    }
    throw new IllegalArgumentException("no folder '" + id + "'; choose from "
        + Arrays.stream(values()).map(f -> f.id).toList());
  }

  /**
   * A written folder.
   *
   * @param expected what a right report says: verdict, symptom and culprit ranks, e.g. "HANG CPU_STALL [364]"
   * @param bytes the size of its dumps
   */
  record Written(String expected, long bytes) {}

  /** Writes the dumps into {@code dir} as PyTorch names them by default. */
  Written write(Path dir) throws IOException {
    if (tensorParallel == 0) {
      return analyzeLayout(ranks, dir);
    }
    Topology topology = Topology.builder().worldSize(ranks).ranksPerHost(8).tensorParallel(tensorParallel)
        .pipelineStages(pipelineStages).build();
    Workload workload = Workload.builder().gradients(Gradients.ALLREDUCE_COALESCED)
        .expertParallel(pipelineStages > 1).shardedOverWorld(shardedOverWorld).build();
    return write(job(ranks, kind).topology(topology).workload(workload).build(), dir);
  }

  /**
   * {@link AnalyzeBench}'s folder of {@code ranks} dumps: FaultyDumps' Megatron layout for that size (coalesced
   * gradient groups, expert parallelism) and a GPU stall.
   */
  static Written analyzeLayout(int ranks, Path dir) throws IOException {
    return write(job(ranks, Kind.GPU_STALL).ranks(ranks).build(), dir);
  }

  private static FaultyDumps.Builder job(int ranks, Kind kind) {
    return FaultyDumps.builder().entriesPerRank(ENTRIES).stackDepth(STACK_DEPTH)
        .fault(kind, kind == Kind.NONE ? -1 : ranks * 3 / 4 - 20);
  }

  private static Written write(FaultyDumps job, Path dir) throws IOException {
    job.write(dir, DumpReader.DEFAULT_PREFIX, Encoding.PICKLE);
    long bytes;
    try (Stream<Path> files = Files.list(dir)) {
      bytes = files.mapToLong(AnalyzeBench::size).sum();
    }
    // A report with no hang names no symptom ("NONE").
    return new Written(job.kind() == Kind.NONE ? "NO_HANG NONE []" : "HANG " + job.symptom() + " " + job.culprits(),
        bytes);
  }
}
