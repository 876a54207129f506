package dev.frdiag.testing.dumps;

import dev.frdiag.proto.v1.Frame;
import java.util.ArrayList;
import java.util.List;

/**
 * The Python frames a Megatron training step runs inside, innermost first: module calls through the model's
 * layers, the schedule, the training loop and the launcher. Synthetic, and deterministic.
 */
final class OuterFrames {
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
