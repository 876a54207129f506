package dev.frdiag.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The demo end to end, per fault kind: a daemon on a loopback ephemeral port, 16 simulated ranks streaming to it
 * over gRPC, an injected fault, and the report the daemon's watchdog writes (for a slow rank, its straggler watch).
 */
class DemoEndToEndTest {

  @ParameterizedTest(name = "{0} on rank {1}")
  @CsvSource({
      "cpu-stall, 5, CPU_STALL",
      "gpu-stall, 11, GPU_STALL",
      "mismatch, 6, MISMATCH",
      "dead-rank, 14, DEAD_RANK",
      "fabric, 3, FABRIC"})
  void diagnosesTheInjectedFault(String fault, int rank, String symptom) throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDemo.run(new String[] {"--fault", fault, "--rank", Integer.toString(rank), "--at-step", "4",
        "--stall-timeout", "1s", "--json"}, new PrintWriter(out), new PrintWriter(err));
    assertThat(code).as(err.toString()).isZero();

    JsonNode report = new ObjectMapper().readTree(out.toString());
    assertThat(report.get("schema").asText()).isEqualTo("frdiag.report/v1");
    assertThat(report.get("verdict").asText()).isEqualTo("HANG");
    assertThat(report.get("symptom").asText()).isEqualTo(symptom);
    List<Integer> culprits = new ArrayList<>();
    report.get("culprit_ranks").forEach(n -> culprits.add(n.asInt()));
    if (fault.equals("fabric")) {
      // No link evidence in the simulation: no rank is merely waiting gets blamed.
      assertThat(culprits).isEmpty();
    } else {
      assertThat(culprits).containsExactly(rank);
    }
    assertThat(report.get("collective").get("comms_id").asText()).matches("[0-9a-f]{16}");
    assertThat(report.get("evidence").size()).isPositive();
    assertThat(err.toString()).contains("[demo] injecting " + fault);
  }

  @Test
  void aRankSlowEveryStepIsReportedAStragglerNotAHang() throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDemo.run(new String[] {"--fault", "slow", "--rank", "9", "--delay", "30ms", "--at-step", "0",
        "--json"}, new PrintWriter(out), new PrintWriter(err));
    assertThat(code).as(err.toString()).isZero();

    JsonNode report = new ObjectMapper().readTree(out.toString());
    assertThat(report.get("trigger").asText()).isEqualTo("straggler");
    assertThat(report.get("verdict").asText() + " " + report.get("symptom").asText() + " "
        + report.get("culprit_ranks")).isEqualTo("SLOW STRAGGLER [9]");
    assertThat(report.get("headline").asText()).startsWith("Rank 9 arrives last at ");
    assertThat(report.get("lateness").get("ranks")).hasSize(16);
    assertThat(err.toString()).contains("[demo] injecting slow on rank 9 at step 0 (30 ms late every step)",
        "[demo] straggler after step ");
  }
}
