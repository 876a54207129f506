package dev.frdiag.readers.progress;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Lines quoted from public threads (pytorch/torchtitan#1287, hiyouga/LLaMA-Factory#8261), as posted. */
class StepProgressReaderTest {

  @Test
  void torchtitanStepsAdvancing() {
    StepProgressReader r = new StepProgressReader();
    r.accept("[rank0]:[titan] 2025-06-16 22:44:56,605 - root - INFO - step: 800  loss:  4.6901  memory: "
        + "49.66GiB(52.28%)  tps: 5,855  tflops: 339.06  mfu: 34.28%", "t.log:1");
    r.accept("[rank0]:[titan] 2025-06-16 22:45:11,360 - root - INFO - step: 810  loss:  4.6838  memory: "
        + "49.66GiB(52.28%)  tps: 5,552  tflops: 321.56  mfu: 32.51%", "t.log:2");
    r.accept("[rank0]:[titan] 2025-06-16 22:45:25,305 - root - INFO - step: 820  loss:  4.6000  memory: "
        + "49.66GiB(52.28%)  tps: 5,876  tflops: 340.28  mfu: 34.41%", "t.log:3");
    assertThat(r.finish()).hasValueSatisfying(p -> {
      assertThat(p.first()).isEqualTo(800);
      assertThat(p.last()).isEqualTo(820);
      assertThat(p.lastSource()).isEqualTo("t.log:3");
    });
  }

  @Test
  void progressBarRedrawsCountAsSteps() {
    StepProgressReader r = new StepProgressReader();
    r.accept("[1745]   1%|          | 10/1752 [00:29<1:22:01,  2.83s/it]", "t.log:1");
    r.accept("[1746]   1%|          | 11/1752 [00:31<1:21:50,  2.82s/it]", "t.log:2");
    r.accept("[1747]   1%|          | 12/1752 [00:34<1:20:50,  2.79s/it]", "t.log:3");
    assertThat(r.finish()).hasValueSatisfying(p -> assertThat(p.last()).isEqualTo(12));
  }

  @Test
  void oneStepPrintedAgainIsNoProgress() {
    StepProgressReader r = new StepProgressReader();
    r.accept("0: [rank0]:2024-11-27 14:29:40,378 - root - INFO - step: 10  loss:  1.5568", "t.log:1");
    r.accept("3: [rank0]:2024-11-27 14:29:40,378 - root - INFO - step: 10  loss:  1.5568", "t.log:2");
    assertThat(r.finish()).isEmpty();
  }
}
