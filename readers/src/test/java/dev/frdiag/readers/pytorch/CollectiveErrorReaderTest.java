package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Lines quoted from public threads (pytorch/pytorch#16295, and a traceback through all_reduce), as posted. */
class CollectiveErrorReaderTest {

  private static List<CollectiveError> read(String... lines) {
    CollectiveErrorReader reader = new CollectiveErrorReader();
    for (int i = 0; i < lines.length; i++) {
      reader.accept(lines[i], "t.log:" + (i + 1));
    }
    return reader.finish();
  }

  @Test
  void aTracebackEndingInACollectiveCallSaysWhichCallRaisedWhat() {
    List<CollectiveError> errors = read(
        "Traceback (most recent call last):",
        "  File \"/home/wangcui/shared/.conda/envs/htranstrack/lib/python3.9/site-packages/torch/distributed/"
            + "distributed_c10d.py\", line 1320, in all_reduce",
        "    work = default_pg.allreduce([tensor], opts)",
        "RuntimeError: NCCL communicator was aborted on rank 2.");
    assertThat(errors).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo(CollectiveError.Kind.RAISED);
      assertThat(e.call()).isEqualTo("all_reduce");
      assertThat(e.message()).isEqualTo("RuntimeError: NCCL communicator was aborted on rank 2.");
      assertThat(e.source()).isEqualTo("t.log:4");
    });
  }

  @Test
  void glooTimeoutsAreRead() {
    List<CollectiveError> errors = read("    work_handle.wait()", "RuntimeError: [/var/lib/jenkins/workspace/third_party/"
        + "gloo/gloo/transport/tcp/unbound_buffer.cc:119] Timed out waiting 1000ms for send operation to complete");
    assertThat(errors).extracting(CollectiveError::kind).contains(CollectiveError.Kind.TIMED_OUT);
  }

  @Test
  void theLaunchersOwnTracebackAndOrdinaryErrorsAreNotCollectiveErrors() {
    assertThat(read(
        "Traceback (most recent call last):",
        "  File \"/data/zjt/anaconda3/envs/cai/lib/python3.9/site-packages/torch/distributed/run.py\", line 761, in "
            + "main",
        "    run(args)",
        "ValueError: could not convert string to float: 'abc'")).isEmpty();
  }

  /** py-spy's dump lists the innermost frame first (huggingface/transformers#22363, as posted). */
  @Test
  void aStackInsideACollectiveWithNoExceptionIsARankWaiting() {
    List<CollectiveError> errors = read(
        "Thread 27321 (active): \"MainThread\"",
        "    broadcast (torch/distributed/distributed_c10d.py:1555)",
        "    wrapper (torch/distributed/distributed_c10d.py:1436)",
        "    broadcast (deepspeed/comm/torch.py:78)");
    assertThat(errors).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo(CollectiveError.Kind.WAITING);
      assertThat(e.call()).isEqualTo("broadcast");
      assertThat(e.source()).isEqualTo("t.log:2");
    });
  }

  /** A stack cut before torch's frames still names the collective its code line calls (deepspeedai/DeepSpeed#7044). */
  @Test
  void aStackEndingInACollectiveCallLineIsARankWaitingThere() {
    List<CollectiveError> errors = read("[2026-02-22 23:55:59] worker-0 >> [rank0]:     dist.all_reduce("
        + "tensor_to_allreduce, group=process_group)");
    assertThat(errors).singleElement().satisfies(e -> {
      assertThat(e.kind()).isEqualTo(CollectiveError.Kind.WAITING);
      assertThat(e.call()).isEqualTo("all_reduce");
      assertThat(e.rank()).isZero();
    });
  }

  /** A CUDA failure that names no rank is still a GPU failing (vllm-project/vllm#17098, as posted). */
  @Test
  void aCudaFailureNamingNoRankIsRead() {
    List<CollectiveError> errors = read("ERROR 04-15 00:31:11 worker_base.py:574] RuntimeError: Triton Error [CUDA]: "
        + "an illegal memory access was encountered");
    assertThat(errors).extracting(CollectiveError::kind).containsExactly(CollectiveError.Kind.CUDA_FAILED);
    assertThat(read("[rank2]:[E ProcessGroupNCCL.cpp:1] [Rank 2] CUDA error: an illegal memory access was "
        + "encountered")).isEmpty();
  }
}
