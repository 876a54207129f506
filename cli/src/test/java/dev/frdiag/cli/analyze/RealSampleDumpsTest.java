package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.cli.ExitCode;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.report.Report;
import org.junit.jupiter.api.Test;

/** The answers on dumps PyTorch itself wrote, whose faults were injected on purpose (see the samples' README). */
class RealSampleDumpsTest {
  @Test
  void gpuErrorOnRanks12And14IsBlamedOnExactlyThoseRanks() {
    Analyze.Result r = Analyze.json(Analyze.sample("nvrx_gpu_error_1st"));
    assertThat(r.code()).as(r.err()).isEqualTo(ExitCode.HANG);
    Report report = r.report();
    assertThat(report.verdict()).isEqualTo(Verdict.HANG);
    assertThat(report.culpritRanks()).containsExactly(12, 14);
    assertThat(report.symptom()).isEqualTo(Symptom.GPU_STALL);
  }

  @Test
  void pythonWedgedOnRanks9And14IsACpuStallOfExactlyThoseRanks() {
    Analyze.Result r = Analyze.json(Analyze.sample("nvrx_lock_gil_1st"));
    assertThat(r.code()).as(r.err()).isEqualTo(ExitCode.HANG);
    Report report = r.report();
    assertThat(report.culpritRanks()).containsExactly(9, 14);
    assertThat(report.symptom()).isEqualTo(Symptom.CPU_STALL);
    // The ground truth beside the dumps is not a dump: noted, not an error.
    assertThat(r.errLines()).containsExactly("fr-diagnose: note: ignored fault_injection.log: not named <prefix><rank>");
  }
}
