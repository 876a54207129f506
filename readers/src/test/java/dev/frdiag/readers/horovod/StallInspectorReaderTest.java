package dev.frdiag.readers.horovod;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Lines quoted from public threads (horovod/horovod#457, #530, #3950), as posted. */
class StallInspectorReaderTest {

  @Test
  void theOlderPerOpFormNamesTheMissingRank() {
    StallInspectorReader r = new StallInspectorReader();
    r.accept("training/SGD/DistributedSGD_Allreduce/HorovodAllreduce_training_SGD_gradients_conv5_block16_2_conv_"
        + "convolution_grad_Conv2DBackpropFilter_0 [missing ranks: 2]", "h.log:1");
    r.accept("training/SGD/DistributedSGD_Allreduce/HorovodAllreduce_training_SGD_gradients_AddN_100_0 "
        + "[missing ranks: 2]", "h.log:2");
    assertThat(r.finish()).extracting(StallInspectorReader.MissingRank::rank).containsExactly(2);
    assertThat(r.finish().get(0).source()).isEqualTo("h.log:1");
  }

  @Test
  void readyRanksLeaveOutTheRanksBelowTheHighestThatNeverSubmitted() {
    StallInspectorReader r = new StallInspectorReader();
    r.accept("Stalled ops: HorovodBroadcast_InceptionV3_Logits_Conv2d_1c_1x1_weights_0 [ready ranks: 5, 6, 3, 1, 4, "
        + "0]。", "h.log:1");
    assertThat(r.finish()).extracting(StallInspectorReader.MissingRank::rank).containsExactly(2);
  }

  @Test
  void theStallInspectorTableListsEachMissingRankOnItsOwnLine() {
    StallInspectorReader r = new StallInspectorReader();
    r.accept("[0] Missing ranks:", "h.log:1");
    r.accept("[0] 0: [broadcast.assign_conv_block_modules.0.0.bias, broadcast.assign_conv_block_modules.0.0.weight]",
        "h.log:2");
    r.accept("[0] 1: [broadcast.assign_conv_block_modules.0.0.bias, broadcast.assign_conv_block_modules.0.0.weight]",
        "h.log:3");
    r.accept("[0] epoch 1", "h.log:4");
    assertThat(r.finish()).extracting(StallInspectorReader.MissingRank::rank).containsExactly(0, 1);
  }
}
