package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.Evidence;
import dev.frdiag.cli.ExitCode;
import dev.frdiag.report.Report;
import dev.frdiag.testing.golden.GoldenReport;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code analyze} tells every file by its content, whatever it is called: real torch 2.13 profiler traces named
 * {@code rank<N>.json} (as {@code prof.export_chrome_trace(f"rank{r}.json")} writes them) are traces, not dumps
 * that fail to read, and one folder holding a job's dumps, traces, stack dumps and logs is the job's evidence.
 */
class FilesToldByContentTest {
  /** The evidence module's real torch 2.13 traces and dumps of gloo jobs (their README.md says what they hold). */
  private static final Path TRACES = Path.of("..", "evidence", "src", "test", "resources", "pytorch-2.13-traces");
  private static final Path GLOO = Path.of("..", "evidence", "src", "test", "resources", "pytorch-2.13-gloo");

  @TempDir
  Path dir;

  @Test
  void tracesNamedAsExportChromeTraceNamesThemGiveTheReportOfTheirOwnNames() throws IOException {
    Path named = TRACES.resolve("slow_rank2_w4");
    Path renamed = Files.createDirectories(dir.resolve("chrome"));
    for (int r = 0; r < 4; r++) {
      gunzip(only(named, "rank" + r + "."), renamed.resolve("rank" + r + ".json"));
    }

    Analyze.Result asNamed = Analyze.run("analyze", "-q", "--json", named.toString());
    Analyze.Result asRenamed = Analyze.run("analyze", "-q", "--json", renamed.toString());

    assertThat(asRenamed.code()).as(asRenamed.err()).isEqualTo(ExitCode.SLOW);
    assertThat(asRenamed.err()).isEmpty();
    Report report = asRenamed.report();
    assertThat(report.verdict() + " " + report.symptom() + " " + report.culpritRanks())
        .isEqualTo("SLOW STRAGGLER [2]");
    assertThat(GoldenReport.normalize(asRenamed.out())).isEqualTo(GoldenReport.normalize(asNamed.out()));
  }

  @Test
  void aFolderOfDumpsTracesStackDumpsAndLogsGivesTheReportOfThemGivenApart() throws IOException {
    Path mixed = Files.createDirectories(dir.resolve("mixed"));
    Path dumps = Files.createDirectories(dir.resolve("dumps"));
    Path traces = Files.createDirectories(dir.resolve("traces"));
    Path stacks = Files.createDirectories(dir.resolve("stacks"));
    Path job = TRACES.resolve("stall_dp_rank2_w4");
    for (int r = 0; r < 4; r++) {
      for (Path to : List.of(mixed, dumps)) {
        Files.copy(job.resolve("json").resolve("trace_rank_" + r), to.resolve("trace_rank_" + r));
      }
      for (Path to : List.of(mixed, traces)) {
        gunzip(only(job.resolve("traces"), "rank" + r + "."), to.resolve("rank" + r + ".json"));
      }
      for (Path to : List.of(mixed, stacks)) {
        String name = "dump_traceback_rank_" + r + ".txt";
        Files.copy(GLOO.resolve("stall_dp_rank2_w4").resolve("stacks").resolve(name), to.resolve(name));
      }
    }
    String log = "[rank0]:[W1126 10:21:07.123456 ProcessGroupGloo.cpp:123] Warning: a gloo pair was slow to connect\n";
    Path alone = Files.writeString(dir.resolve("train.log"), log);
    Files.writeString(mixed.resolve("train.log"), log);

    Analyze.Result apart = Analyze.run("analyze", "-q", "--json", dumps.toString(), traces.toString(),
        stacks.toString(), alone.toString());
    Analyze.Result together = Analyze.run("analyze", "-q", "--json", mixed.toString());

    assertThat(together.code()).as(together.err()).isEqualTo(ExitCode.HANG);
    Report report = together.report();
    assertThat(report.verdict() + " " + report.symptom() + " " + report.culpritRanks())
        .isEqualTo("HANG CPU_STALL [2]");
    // The traces' history of the stuck collective's group, beside the dumps that show the hang.
    assertThat(report.evidence()).anySatisfy(e -> assertThat(e.kind()).isEqualTo(Evidence.Kind.TRACE_HISTORY));
    assertThat(GoldenReport.normalize(together.out())).isEqualTo(GoldenReport.normalize(apart.out()))
        .contains("read 4 dump files and 1 logs");
  }

  private static Path only(Path folder, String prefix) throws IOException {
    try (Stream<Path> files = Files.list(folder)) {
      List<Path> found = files.filter(f -> f.getFileName().toString().startsWith(prefix)).toList();
      assertThat(found).as("files of %s starting %s", folder, prefix).hasSize(1);
      return found.get(0);
    }
  }

  private static void gunzip(Path from, Path to) throws IOException {
    try (InputStream in = new GZIPInputStream(Files.newInputStream(from))) {
      Files.copy(in, to);
    }
  }
}
