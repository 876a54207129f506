package dev.frdiag.readers.nccltests;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Lines quoted from public threads (NVIDIA/nccl-tests#119, NVIDIA/nccl#352), as posted. */
class NcclTestsReaderTest {

  private static List<NcclTestsRun> read(String... lines) {
    NcclTestsReader reader = new NcclTestsReader();
    for (int i = 0; i < lines.length; i++) {
      reader.accept(lines[i], "t.log:" + (i + 1));
    }
    return reader.finish();
  }

  @Test
  void aTailOfTheResultsTableWithItsClosingLinesIsARunThatCompletedCleanly() {
    List<NcclTestsRun> runs = read(
        "   127926280      31981570     float     sum      -1   2560.7   49.96   95.75      0   2556.2   50.05   95.92      0",
        "   128974856      32243714     float     sum      -1   2583.9   49.92   95.67      0   2562.4   50.33   96.47      0",
        "# Out of bounds values : 0 OK",
        "# Avg bus bandwidth    : 84.8558 ");
    assertThat(runs).singleElement().satisfies(r -> {
      assertThat(r.sizes()).isEqualTo(2);
      assertThat(r.lastSize()).isEqualTo(128974856L);
      assertThat(r.completedCleanly()).isTrue();
      assertThat(r.avgBusBandwidth()).isEqualTo(84.8558);
      assertThat(r.source()).isEqualTo("t.log:1");
    });
  }

  @Test
  void aRunThatPrintedItsDevicesAndNoResultStoppedBeforeItsFirstSize() {
    List<NcclTestsRun> runs = read(
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 ",
        "#",
        "# Using devices",
        "#   Rank  0 Pid  17754 on ds-ml-01-0 device  0 [0x06] Tesla V100-SXM2-32GB",
        "#   Rank  1 Pid  17755 on ds-ml-01-0 device  1 [0x07] Tesla V100-SXM2-32GB",
        "ds-ml-01-0:17754:17754 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>");
    assertThat(runs).singleElement().satisfies(r -> {
      assertThat(r.devices()).isEqualTo(2);
      assertThat(r.hosts()).containsExactly("ds-ml-01-0");
      assertThat(r.sizes()).isZero();
      assertThat(r.finished()).isFalse();
      assertThat(r.completedCleanly()).isFalse();
    });
  }

  @Test
  void linesOfOtherProgramsAreNoRun() {
    assertThat(read("epoch 3 step 100 loss 0.25", "node1:123:456 [0] NCCL INFO Init COMPLETE")).isEmpty();
  }
}
