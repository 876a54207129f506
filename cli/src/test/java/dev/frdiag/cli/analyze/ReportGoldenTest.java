package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.testing.golden.GoldenReport;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Pins what {@code fr-diagnose analyze} says, JSON and text, on the real PyTorch dumps and the real NCCL logs we
 * keep: a change to the analysis, its wording or its renderings shows up here as a reviewed diff of a report,
 * never silently. The files under {@code golden/} were written by the analysis before its split into modules.
 */
class ReportGoldenTest {

  static Stream<String> dumpFolders() {
    return Stream.of("nvrx_gpu_error_1st", "nvrx_lock_gil_1st");
  }

  static Stream<String> ncclLogs() {
    return Stream.of("clmvsnet14-syncbn-enqueued-ahead", "llamafactory7396-watchdog-allreduce",
        "nccl1197-nvls-hang-topology", "nccl1232-socket-2node-4rank-init", "nccl1235-oom-then-socket-closed",
        "nccl1405-ib-status12-roce-recv", "nccltests252-2node-8rank-ib-err4");
  }

  @ParameterizedTest
  @MethodSource("dumpFolders")
  void realDumpsGiveThePinnedReport(String folder) {
    Path dumps = Analyze.sample(folder);
    check("analyze-" + folder, dumps, "");
  }

  @ParameterizedTest
  @MethodSource("ncclLogs")
  void realNcclLogsGiveThePinnedReport(String name) throws Exception {
    Path log = Path.of(ReportGoldenTest.class.getResource("/nccl_logs/" + name + ".log").toURI());
    check("analyze-nccl-" + name, log, log.getParent() + "/");
  }

  /** Runs analyze as JSON and as text; {@code dir} is the input's folder, which reports quote. */
  private static void check(String golden, Path input, String dir) {
    Analyze.Result json = Analyze.run("analyze", "-q", "--json", input.toString());
    Analyze.Result text = Analyze.run("analyze", "-q", input.toString());
    assertThat(json.code()).as(json.err()).isEqualTo(text.code()).isNotEqualTo(2);
    GoldenReport.assertMatches(ReportGoldenTest.class, golden + ".json", unquote(json.out(), dir));
    GoldenReport.assertMatches(ReportGoldenTest.class, golden + ".txt", unquote(text.out(), dir));
  }

  private static String unquote(String report, String dir) {
    return dir.isEmpty() ? report : report.replace(dir, "<dir>/");
  }
}
