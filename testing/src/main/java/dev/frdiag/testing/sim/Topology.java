package dev.frdiag.testing.sim;

import java.util.ArrayList;
import java.util.List;

/**
 * How the simulated job is laid out: ranks on hosts and the Megatron-style tensor-, pipeline- and data-parallel
 * process groups they form.
 *
 * <p>Ranks {@code [s * stageSize, (s + 1) * stageSize)} make up pipeline stage {@code s}. Tensor-parallel groups
 * ({@code tp0}, {@code tp1}, …) are runs of {@code tensorParallel} contiguous ranks inside a stage. Rank {@code r}
 * of stage {@code s} and rank {@code r + stageSize} of stage {@code s + 1} form a two-member pipeline group
 * ({@code pp<r>}). Ranks with the same stage and the same position in their tensor-parallel group form a
 * data-parallel group ({@code dp<stage * tensorParallel + position>}), which the workload also uses for expert
 * parallelism. Every rank is in the world group {@code "0"}.
 *
 * @param worldSize number of ranks, at least 1
 * @param ranksPerHost ranks per host (GPUs per node); the world is a whole number of hosts
 * @param tensorParallel size of a tensor-parallel group; a pipeline stage is a whole number of them
 * @param pipelineStages number of pipeline stages; the world is a whole number of stages
 */
public record Topology(int worldSize, int ranksPerHost, int tensorParallel, int pipelineStages) {
  public static final int DEFAULT_WORLD_SIZE = 16;
  public static final int DEFAULT_RANKS_PER_HOST = 8;
  public static final int DEFAULT_TENSOR_PARALLEL = 4;
  public static final int DEFAULT_PIPELINE_STAGES = 2;

  /** PyTorch's name for the default process group. */
  public static final String WORLD_GROUP_NAME = "0";
  public static final String WORLD_GROUP_DESC = "default_pg";
  public static final String TENSOR_PARALLEL_DESC = "TENSOR_MODEL_PARALLEL_GROUP";
  public static final String PIPELINE_PARALLEL_DESC = "PIPELINE_MODEL_PARALLEL_GROUP";
  public static final String DATA_PARALLEL_DESC = "DATA_PARALLEL_GROUP";

  /**
   * @throws IllegalArgumentException if a size is below 1 or the sizes do not divide each other as described
   */
  public Topology {
    positive(worldSize, "worldSize");
    positive(ranksPerHost, "ranksPerHost");
    positive(tensorParallel, "tensorParallel");
    positive(pipelineStages, "pipelineStages");
    if (worldSize % ranksPerHost != 0) {
      throw new IllegalArgumentException("worldSize " + worldSize + " is not a multiple of ranksPerHost "
          + ranksPerHost + ": every host must be full");
    }
    if (worldSize % pipelineStages != 0) {
      throw new IllegalArgumentException("worldSize " + worldSize + " is not a multiple of pipelineStages "
          + pipelineStages + ": every stage must have the same number of ranks");
    }
    int stageSize = worldSize / pipelineStages;
    if (stageSize % tensorParallel != 0) {
      throw new IllegalArgumentException("a pipeline stage has " + stageSize + " ranks (worldSize " + worldSize
          + " / pipelineStages " + pipelineStages + "), which is not a multiple of tensorParallel "
          + tensorParallel);
    }
  }

  /** 16 ranks on 2 hosts, tensor-parallel 4, 2 pipeline stages, data-parallel 2. */
  public static Topology defaults() {
    return builder().build();
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** Ranks per pipeline stage. */
  public int stageSize() {
    return worldSize / pipelineStages;
  }

  /** Size of a data-parallel group. */
  public int dataParallel() {
    return stageSize() / tensorParallel;
  }

  /** Number of hosts. */
  public int hostCount() {
    return worldSize / ranksPerHost;
  }

  /** Host name of {@code rank}: "node00", "node01", … (two digits at least). */
  public String hostOf(int rank) {
    checkRank(rank);
    return String.format("node%02d", rank / ranksPerHost);
  }

  /** Rank among the ranks of its host (LOCAL_RANK), also its CUDA device. */
  public int localRankOf(int rank) {
    checkRank(rank);
    return rank % ranksPerHost;
  }

  /** Pipeline stage of {@code rank}, 0-based. */
  public int stageOf(int rank) {
    checkRank(rank);
    return rank / stageSize();
  }

  /** Position of {@code rank} in its tensor-parallel group. */
  public int tensorParallelRankOf(int rank) {
    checkRank(rank);
    return rank % tensorParallel;
  }

  /** The default group "0" of every rank. */
  public ProcessGroupSpec worldGroup() {
    int[] ranks = new int[worldSize];
    for (int i = 0; i < worldSize; i++) {
      ranks[i] = i;
    }
    return new ProcessGroupSpec(WORLD_GROUP_NAME, WORLD_GROUP_DESC, ranks);
  }

  /** The tensor-parallel group ("tp<n>") of {@code rank}. */
  public ProcessGroupSpec tensorParallelGroupOf(int rank) {
    checkRank(rank);
    int index = rank / tensorParallel;
    int[] ranks = new int[tensorParallel];
    for (int i = 0; i < tensorParallel; i++) {
      ranks[i] = index * tensorParallel + i;
    }
    return new ProcessGroupSpec(tensorParallelGroupNameOf(rank), TENSOR_PARALLEL_DESC, ranks);
  }

  /**
   * The two-member pipeline group joining {@code rank} to the same position in the next stage.
   *
   * @throws IllegalArgumentException if {@code rank} is in the last stage
   */
  public ProcessGroupSpec nextStageGroupOf(int rank) {
    return new ProcessGroupSpec(nextStageGroupNameOf(rank), PIPELINE_PARALLEL_DESC,
        new int[] {rank, rank + stageSize()});
  }

  /**
   * The two-member pipeline group joining {@code rank} to the same position in the previous stage.
   *
   * @throws IllegalArgumentException if {@code rank} is in the first stage
   */
  public ProcessGroupSpec previousStageGroupOf(int rank) {
    String name = previousStageGroupNameOf(rank);
    return new ProcessGroupSpec(name, PIPELINE_PARALLEL_DESC, new int[] {rank - stageSize(), rank});
  }

  /** The pipeline groups of {@code rank}: none with one stage, one at either end, two in the middle. */
  public List<ProcessGroupSpec> pipelineGroupsOf(int rank) {
    List<ProcessGroupSpec> out = new ArrayList<>(2);
    int stage = stageOf(rank);
    if (stage > 0) {
      out.add(previousStageGroupOf(rank));
    }
    if (stage < pipelineStages - 1) {
      out.add(nextStageGroupOf(rank));
    }
    return out;
  }

  /** The data-parallel group ("dp<n>") of {@code rank}. */
  public ProcessGroupSpec dataParallelGroupOf(int rank) {
    int stage = stageOf(rank);
    int position = tensorParallelRankOf(rank);
    int size = dataParallel();
    int[] ranks = new int[size];
    for (int i = 0; i < size; i++) {
      ranks[i] = stage * stageSize() + position + i * tensorParallel;
    }
    return new ProcessGroupSpec(dataParallelGroupNameOf(rank), DATA_PARALLEL_DESC, ranks);
  }

  /** The group the workload's expert-parallel all_to_all runs on: the rank's data-parallel group. */
  public ProcessGroupSpec expertParallelGroupOf(int rank) {
    return dataParallelGroupOf(rank);
  }

  /** Every group {@code rank} belongs to, in the order a rank creates them: world, tensor, pipeline, data. */
  public List<ProcessGroupSpec> groupsOf(int rank) {
    List<ProcessGroupSpec> out = new ArrayList<>(5);
    out.add(worldGroup());
    out.add(tensorParallelGroupOf(rank));
    out.addAll(pipelineGroupsOf(rank));
    out.add(dataParallelGroupOf(rank));
    return out;
  }

  // Names alone, so that setting up thousands of ranks does not build the world group's members per rank.

  String tensorParallelGroupNameOf(int rank) {
    checkRank(rank);
    return "tp" + rank / tensorParallel;
  }

  String nextStageGroupNameOf(int rank) {
    if (stageOf(rank) == pipelineStages - 1) {
      throw new IllegalArgumentException("rank " + rank + " is in the last pipeline stage");
    }
    return "pp" + rank;
  }

  String previousStageGroupNameOf(int rank) {
    if (stageOf(rank) == 0) {
      throw new IllegalArgumentException("rank " + rank + " is in the first pipeline stage");
    }
    return "pp" + (rank - stageSize());
  }

  String dataParallelGroupNameOf(int rank) {
    return "dp" + (stageOf(rank) * tensorParallel + tensorParallelRankOf(rank));
  }

  /** Names of the groups of {@code rank}, in the order of {@link #groupsOf}. */
  List<String> groupNamesOf(int rank) {
    List<String> out = new ArrayList<>(5);
    out.add(WORLD_GROUP_NAME);
    out.add(tensorParallelGroupNameOf(rank));
    int stage = stageOf(rank);
    if (stage > 0) {
      out.add(previousStageGroupNameOf(rank));
    }
    if (stage < pipelineStages - 1) {
      out.add(nextStageGroupNameOf(rank));
    }
    out.add(dataParallelGroupNameOf(rank));
    return out;
  }

  /** Every group of the job once, in the same kind order as {@link #groupsOf}. */
  public List<ProcessGroupSpec> groups() {
    List<ProcessGroupSpec> out = new ArrayList<>();
    out.add(worldGroup());
    for (int r = 0; r < worldSize; r += tensorParallel) {
      out.add(tensorParallelGroupOf(r));
    }
    for (int r = 0; r < worldSize - stageSize(); r++) {
      out.add(nextStageGroupOf(r));
    }
    for (int stage = 0; stage < pipelineStages; stage++) {
      for (int position = 0; position < tensorParallel; position++) {
        out.add(dataParallelGroupOf(stage * stageSize() + position));
      }
    }
    return out;
  }

  /**
   * @throws IllegalArgumentException if {@code rank} is not a rank of this world
   */
  public void checkRank(int rank) {
    if (rank < 0 || rank >= worldSize) {
      throw new IllegalArgumentException("rank " + rank + " is outside the world of " + worldSize + " ranks");
    }
  }

  private static void positive(int value, String name) {
    if (value < 1) {
      throw new IllegalArgumentException(name + " must be at least 1, got " + value);
    }
  }

  /** Builder for {@link Topology}, starting from the defaults; {@link #build} validates. */
  public static final class Builder {
    private int worldSize = DEFAULT_WORLD_SIZE;
    private int ranksPerHost = DEFAULT_RANKS_PER_HOST;
    private int tensorParallel = DEFAULT_TENSOR_PARALLEL;
    private int pipelineStages = DEFAULT_PIPELINE_STAGES;

    private Builder() {}

    public Builder worldSize(int n) {
      worldSize = n;
      return this;
    }

    public Builder ranksPerHost(int n) {
      ranksPerHost = n;
      return this;
    }

    public Builder tensorParallel(int n) {
      tensorParallel = n;
      return this;
    }

    public Builder pipelineStages(int n) {
      pipelineStages = n;
      return this;
    }

    /**
     * @throws IllegalArgumentException as {@link Topology#Topology} does
     */
    public Topology build() {
      return new Topology(worldSize, ranksPerHost, tensorParallel, pipelineStages);
    }
  }
}
