package dev.frdiag.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.testing.golden.GoldenReport;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Pins the whole report the demo's daemon writes for each fault kind, apart from times and durations: the
 * files under {@code golden/} were written by the daemon before its split into modules.
 */
class DemoGoldenTest {

  @ParameterizedTest(name = "{0} on rank {1}")
  @CsvSource({"cpu-stall, 5", "gpu-stall, 11", "mismatch, 6", "dead-rank, 14", "fabric, 3"})
  void reportIsThePinnedOne(String fault, int rank) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDemo.run(new String[] {"--fault", fault, "--rank", Integer.toString(rank), "--at-step", "4",
        "--stall-timeout", "1s", "--json"}, new PrintWriter(out), new PrintWriter(err));
    assertThat(code).as(err.toString()).isZero();
    // A dead rank's last record is whichever reached the daemon before the process went: a race by nature.
    // So are the cells of its rows in the report's grid and the records the report quotes of it.
    String report = !fault.equals("dead-rank") ? out.toString() : out.toString().replaceAll("\"last_op\" : \"0#\\d+ all_reduce \\(completed\\)\"",
        "\"last_op\" : \"0#<n> all_reduce (completed)\"").replaceAll("\"cells\" : \"[^\"]*\",(\\s*)\"lost\" : true",
        "\"cells\" : \"<as far as its records reached>\",$1\"lost\" : true")
        .replaceAll("\"records\" : \\[(?:\\s*\"[^\"]*\",?)*\\s*\\]", "\"records\" : [ \"<as far as its records reached>\" ]");
    GoldenReport.assertMatches(DemoGoldenTest.class, "demo-" + fault + ".json", report);
  }
}
