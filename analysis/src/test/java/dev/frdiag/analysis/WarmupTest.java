package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.Symptom;
import org.junit.jupiter.api.Test;

class WarmupTest {
  @Test
  void warmupExercisesARealDiagnosis() {
    // If the synthetic hang stopped being diagnosed, the warm-up would stop compiling the paths incidents take.
    Diagnosis d = HangAnalyzer.analyze(Warmup.syntheticStall(64, 40));
    assertThat(d.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(1);
  }
}
