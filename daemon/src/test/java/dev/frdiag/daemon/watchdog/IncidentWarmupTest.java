package dev.frdiag.daemon.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.report.Report;
import org.junit.jupiter.api.Test;

class IncidentWarmupTest {
  @Test
  void theRehearsalDiagnosesItsSyntheticStallFromWindowsAndRepliesOnTheStream() {
    // Were it not diagnosed, the rehearsal would no longer compile the paths a real incident takes.
    Report report = IncidentWarmup.run(1);
    assertThat(report.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(report.culpritRanks()).containsExactly(1);
    // Every rank, whether its window stood in or its reply said its records were on the stream, is placed by its
    // own records (from counters alone it would read "not completed").
    assertThat(report.rankStates().stream()
        .filter(g -> g.state() == Diagnosis.State.WAITING || g.state() == Diagnosis.State.NOT_STARTED)
        .mapToInt(g -> g.ranks().size()).sum()).isEqualTo(64);
  }
}
