package dev.frdiag.testing.sim;

import dev.frdiag.proto.v1.Frame;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What every rank issues in one training step, in program order:
 *
 * <ol>
 *   <li>tensor parallel: {@code _all_gather_base} ([tokens, hidden] to [tokens * tp, hidden]) and
 *       {@code _reduce_scatter_base} (back), BFloat16, on the rank's tp group;
 *   <li>pipeline parallel: the forward activation to the next stage and the gradient back, as {@code send} and
 *       {@code recv} on the two-member pp groups (stage 0 sends then receives, the last stage receives then
 *       sends);
 *   <li>expert parallel (optional): {@code all_to_all} of the tokens on the data-parallel group;
 *   <li>gradients (optional): two Float {@code all_reduce}s on the data-parallel group inside
 *       {@code _coalescing_manager}, recorded as PyTorch records either path (see {@link Gradients});
 *   <li>the data-parallel gradient bucket {@code all_reduce} ([hidden, hidden], Float);
 *   <li>the loss: an {@code all_reduce} of one Float on the world group "0".
 * </ol>
 *
 * <p>Sharded over the world (as FSDP shards a model without a replica dimension), the data-parallel ops give way to
 * the world group's: the parameters' {@code _all_gather_base} before the forward and the gradients'
 * {@code _reduce_scatter_base} after the backward ([hidden * hidden] across the world, Float), then the loss.
 *
 * <p>Ops on a group of one rank are left out, as Megatron does (no tp ops with tensorParallel 1).
 *
 * @param tokens tokens per micro-batch (first dimension of activations), at least 1
 * @param hidden hidden size, at least 2 so that a mismatched size can halve it
 * @param expertParallel whether to issue the expert-parallel all_to_all
 * @param gradients how the coalesced gradient all_reduces are issued and recorded
 * @param shardedOverWorld whether parameters and gradients go through the world group (FSDP-like) instead of the
 *     data-parallel groups
 */
public record Workload(long tokens, long hidden, boolean expertParallel, Gradients gradients,
    boolean shardedOverWorld) {
  public static final long DEFAULT_TOKENS = 4096;
  public static final long DEFAULT_HIDDEN = 4096;
  public static final boolean DEFAULT_EXPERT_PARALLEL = true;
  public static final Gradients DEFAULT_GRADIENTS = Gradients.COALESCED_GROUP;

  /**
   * How {@code _coalescing_manager} around the gradient all_reduces shows in a rank's ring. PyTorch records the
   * slow path (ops a fused call does not cover, as {@code ProcessGroupNCCL::startCoalescing}/{@code endCoalescing}
   * run them) as one entry per op sharing one collective seq, then an end entry ({@code nccl:coalesced}); the fast
   * path (all_reduce, all_gather_into_tensor and reduce_scatter_tensor since PyTorch 2.2) as one fused op,
   * {@code nccl:allreduce_coalesced}, whose sizes list every tensor.
   */
  public enum Gradients {
    /** No coalesced gradient all_reduces. */
    NONE,
    /** Each all_reduce recorded, then the group's end entry. */
    COALESCED_GROUP,
    /** One fused {@code allreduce_coalesced} entry. */
    ALLREDUCE_COALESCED
  }

  static final String ACTIVATION_DTYPE = "BFloat16";
  static final String GRADIENT_DTYPE = "Float";

  /**
   * @throws IllegalArgumentException if {@code tokens} is below 1 or {@code hidden} below 2
   */
  public Workload {
    if (tokens < 1) {
      throw new IllegalArgumentException("tokens must be at least 1, got " + tokens);
    }
    if (hidden < 2) {
      throw new IllegalArgumentException("hidden must be at least 2, got " + hidden);
    }
    Objects.requireNonNull(gradients, "gradients");
  }

  /** 4096 tokens, hidden 4096, expert parallelism on, coalesced gradients recorded as a group, not sharded. */
  public static Workload defaults() {
    return builder().build();
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** What an op is for; faults pick their op by role. */
  enum Role {
    TP_ALL_GATHER, TP_REDUCE_SCATTER, PP_SEND, PP_RECV, EP_ALL_TO_ALL, DP_COALESCED, DP_ALLREDUCE_COALESCED,
    DP_ALL_REDUCE, WORLD_ALL_GATHER, WORLD_REDUCE_SCATTER, WORLD_ALL_REDUCE
  }

  /** The shape and dtype of the one tensor on either side of an op. */
  record Tensor(String dtype, long... dims) {
    long[][] shapes() {
      return new long[][] {dims.clone()};
    }

    /** The same tensor with its first dimension halved: what a rank with a wrong config would send. */
    Tensor halved() {
      long[] copy = dims.clone();
      copy[0] /= 2;
      return new Tensor(dtype, copy);
    }
  }

  /** One op name with its tensors. */
  record Call(String op, Tensor inputs, Tensor outputs) {}

  /**
   * One unit of a rank's device stream: a single collective, a single send/recv to {@code peer}, or a coalesced
   * group of collectives that runs and completes as one. {@code group} is the process group's name.
   */
  record StepOp(Role role, String group, int peer, List<Call> calls, List<Frame> stack) {
    boolean p2p() {
      return role == Role.PP_SEND || role == Role.PP_RECV;
    }

    boolean coalesced() {
      return role == Role.DP_COALESCED;
    }

    /** One recorded op for all the calls: PyTorch's fused path, whose sizes list every call's tensor. */
    boolean fused() {
      return role == Role.DP_ALLREDUCE_COALESCED;
    }
  }

  /** The ops {@code rank} issues in every step, in program order. */
  List<StepOp> stepOf(Topology topology, int rank) {
    topology.checkRank(rank);
    List<StepOp> ops = new ArrayList<>();
    int tp = topology.tensorParallel();
    Tensor shard = new Tensor(ACTIVATION_DTYPE, tokens, hidden);
    Tensor gathered = new Tensor(ACTIVATION_DTYPE, tokens * tp, hidden);
    if (tp > 1) {
      String tpGroup = topology.tensorParallelGroupNameOf(rank);
      ops.add(collective(Role.TP_ALL_GATHER, tpGroup, new Call("_all_gather_base", shard, gathered)));
      ops.add(collective(Role.TP_REDUCE_SCATTER, tpGroup, new Call("_reduce_scatter_base", gathered, shard)));
    }
    addPipeline(topology, rank, shard, ops);
    if (shardedOverWorld && topology.worldSize() > 1) {
      long world = topology.worldSize();
      Tensor parameterShard = new Tensor(GRADIENT_DTYPE, hidden * hidden / world);
      Tensor parameters = new Tensor(GRADIENT_DTYPE, hidden * hidden / world * world);
      String g = Topology.WORLD_GROUP_NAME;
      ops.add(collective(Role.WORLD_ALL_GATHER, g, new Call("_all_gather_base", parameterShard, parameters)));
      ops.add(collective(Role.WORLD_REDUCE_SCATTER, g, new Call("_reduce_scatter_base", parameters,
          parameterShard)));
    } else if (topology.dataParallel() > 1) {
      // Expert parallelism reuses the data-parallel group (see Topology#expertParallelGroupOf).
      String dp = topology.dataParallelGroupNameOf(rank);
      if (expertParallel) {
        ops.add(collective(Role.EP_ALL_TO_ALL, dp, new Call("all_to_all", shard, shard)));
      }
      if (gradients != Gradients.NONE) {
        Tensor weights = new Tensor(GRADIENT_DTYPE, 4 * hidden);
        Tensor biases = new Tensor(GRADIENT_DTYPE, hidden);
        Role role = gradients == Gradients.COALESCED_GROUP ? Role.DP_COALESCED : Role.DP_ALLREDUCE_COALESCED;
        ops.add(new StepOp(role, dp, -1,
            List.of(new Call("all_reduce", weights, weights), new Call("all_reduce", biases, biases)),
            Stacks.of(Role.DP_COALESCED)));
      }
      Tensor bucket = new Tensor(GRADIENT_DTYPE, hidden, hidden);
      ops.add(collective(Role.DP_ALL_REDUCE, dp, new Call("all_reduce", bucket, bucket)));
    }
    Tensor loss = new Tensor(GRADIENT_DTYPE, 1);
    ops.add(collective(Role.WORLD_ALL_REDUCE, Topology.WORLD_GROUP_NAME, new Call("all_reduce", loss, loss)));
    return ops;
  }

  /** Forward: receive from the previous stage, send to the next; backward: the other way round. */
  private static void addPipeline(Topology topology, int rank, Tensor activations, List<StepOp> ops) {
    int stage = topology.stageOf(rank);
    boolean first = stage == 0;
    boolean last = stage == topology.pipelineStages() - 1;
    int stageSize = topology.stageSize();
    if (!first) {
      ops.add(p2p(Role.PP_RECV, topology.previousStageGroupNameOf(rank), rank - stageSize, activations));
    }
    if (!last) {
      ops.add(p2p(Role.PP_SEND, topology.nextStageGroupNameOf(rank), rank + stageSize, activations));
      ops.add(p2p(Role.PP_RECV, topology.nextStageGroupNameOf(rank), rank + stageSize, activations));
    }
    if (!first) {
      ops.add(p2p(Role.PP_SEND, topology.previousStageGroupNameOf(rank), rank - stageSize, activations));
    }
  }

  private static StepOp collective(Role role, String group, Call call) {
    return new StepOp(role, group, -1, List.of(call), Stacks.of(role));
  }

  private static StepOp p2p(Role role, String group, int peer, Tensor tensor) {
    String op = role == Role.PP_SEND ? "send" : "recv";
    return new StepOp(role, group, peer, List.of(new Call(op, tensor, tensor)), Stacks.of(role));
  }

  /** Python stacks as a Megatron job would record them, innermost first; shared by every rank. */
  private static final class Stacks {
    private static final Frame TRAIN_STEP = frame("train_step", "megatron/training/training.py", 1178);
    private static final Frame FORWARD_BACKWARD =
        frame("forward_backward_pipelining_without_interleaving", "megatron/core/pipeline_parallel/schedules.py",
            1873);
    private static final List<Frame> TP_ALL_GATHER = List.of(
        frame("_all_gather_base", "torch/distributed/distributed_c10d.py", 3804),
        frame("_gather_along_first_dim", "megatron/core/tensor_parallel/mappings.py", 222),
        frame("forward", "megatron/core/tensor_parallel/layers.py", 556),
        FORWARD_BACKWARD, TRAIN_STEP);
    private static final List<Frame> TP_REDUCE_SCATTER = List.of(
        frame("_reduce_scatter_base", "torch/distributed/distributed_c10d.py", 4196),
        frame("_reduce_scatter_along_first_dim", "megatron/core/tensor_parallel/mappings.py", 287),
        frame("forward", "megatron/core/tensor_parallel/layers.py", 870),
        FORWARD_BACKWARD, TRAIN_STEP);
    private static final List<Frame> PP_SEND = List.of(
        frame("isend", "torch/distributed/distributed_c10d.py", 2386),
        frame("_p2p_ops", "megatron/core/pipeline_parallel/p2p_communication.py", 220),
        frame("send_forward_recv_backward", "megatron/core/pipeline_parallel/p2p_communication.py", 512),
        FORWARD_BACKWARD, TRAIN_STEP);
    private static final List<Frame> PP_RECV = List.of(
        frame("irecv", "torch/distributed/distributed_c10d.py", 2431),
        frame("_p2p_ops", "megatron/core/pipeline_parallel/p2p_communication.py", 232),
        frame("recv_forward", "megatron/core/pipeline_parallel/p2p_communication.py", 431),
        FORWARD_BACKWARD, TRAIN_STEP);
    private static final List<Frame> EP_ALL_TO_ALL = List.of(
        frame("all_to_all_single", "torch/distributed/distributed_c10d.py", 4577),
        frame("forward", "megatron/core/tensor_parallel/mappings.py", 413),
        frame("token_permutation", "megatron/core/transformer/moe/token_dispatcher.py", 647),
        FORWARD_BACKWARD, TRAIN_STEP);
    private static final List<Frame> DP_COALESCED = List.of(
        frame("_coalescing_manager", "torch/distributed/distributed_c10d.py", 2580),
        frame("start_grad_sync", "megatron/core/distributed/param_and_grad_buffer.py", 398),
        frame("finish_grad_sync", "megatron/core/distributed/distributed_data_parallel.py", 421),
        TRAIN_STEP);
    private static final List<Frame> DP_ALL_REDUCE = List.of(
        frame("all_reduce", "torch/distributed/distributed_c10d.py", 2806),
        frame("start_grad_sync", "megatron/core/distributed/param_and_grad_buffer.py", 410),
        frame("finish_grad_sync", "megatron/core/distributed/distributed_data_parallel.py", 421),
        TRAIN_STEP);
    private static final List<Frame> WORLD_ALL_GATHER = List.of(
        frame("all_gather_into_tensor", "torch/distributed/distributed_c10d.py", 3759),
        frame("_all_gather_flat_param", "torch/distributed/fsdp/_flat_param.py", 1453),
        frame("_unshard", "torch/distributed/fsdp/_runtime_utils.py", 331),
        FORWARD_BACKWARD, TRAIN_STEP);
    private static final List<Frame> WORLD_REDUCE_SCATTER = List.of(
        frame("reduce_scatter_tensor", "torch/distributed/distributed_c10d.py", 4160),
        frame("_reduce_grad", "torch/distributed/fsdp/_runtime_utils.py", 842),
        frame("_post_backward_hook", "torch/distributed/fsdp/_runtime_utils.py", 770),
        FORWARD_BACKWARD, TRAIN_STEP);
    private static final List<Frame> WORLD_ALL_REDUCE = List.of(
        frame("all_reduce", "torch/distributed/distributed_c10d.py", 2806),
        frame("average_losses_across_data_parallel_group", "megatron/training/utils.py", 196),
        frame("loss_func", "pretrain_gpt.py", 160),
        TRAIN_STEP);

    static List<Frame> of(Role role) {
      return switch (role) {
        case TP_ALL_GATHER -> TP_ALL_GATHER;
        case TP_REDUCE_SCATTER -> TP_REDUCE_SCATTER;
        case PP_SEND -> PP_SEND;
        case PP_RECV -> PP_RECV;
        case EP_ALL_TO_ALL -> EP_ALL_TO_ALL;
        case DP_COALESCED, DP_ALLREDUCE_COALESCED -> DP_COALESCED;
        case DP_ALL_REDUCE -> DP_ALL_REDUCE;
        case WORLD_ALL_GATHER -> WORLD_ALL_GATHER;
        case WORLD_REDUCE_SCATTER -> WORLD_REDUCE_SCATTER;
        case WORLD_ALL_REDUCE -> WORLD_ALL_REDUCE;
      };
    }

    private static Frame frame(String name, String file, int line) {
      return Frame.newBuilder().setName(name).setFilename(file).setLine(line).build();
    }
  }

  /** Builder for {@link Workload}, starting from the defaults; {@link #build} validates. */
  public static final class Builder {
    private long tokens = DEFAULT_TOKENS;
    private long hidden = DEFAULT_HIDDEN;
    private boolean expertParallel = DEFAULT_EXPERT_PARALLEL;
    private Gradients gradients = DEFAULT_GRADIENTS;
    private boolean shardedOverWorld;

    private Builder() {}

    public Builder tokens(long n) {
      tokens = n;
      return this;
    }

    public Builder hidden(long n) {
      hidden = n;
      return this;
    }

    public Builder expertParallel(boolean on) {
      expertParallel = on;
      return this;
    }

    /** Coalesced gradient all_reduces recorded as a group ({@link Gradients#COALESCED_GROUP}), or none. */
    public Builder coalescedGradients(boolean on) {
      gradients = on ? Gradients.COALESCED_GROUP : Gradients.NONE;
      return this;
    }

    public Builder gradients(Gradients how) {
      gradients = how;
      return this;
    }

    /** Parameters and gradients through the world group, FSDP-like, instead of the data-parallel groups. */
    public Builder shardedOverWorld(boolean on) {
      shardedOverWorld = on;
      return this;
    }

    /**
     * @throws IllegalArgumentException as {@link Workload#Workload} does
     */
    public Workload build() {
      return new Workload(tokens, hidden, expertParallel, gradients, shardedOverWorld);
    }
  }
}
