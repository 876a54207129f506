package dev.frdiag.torchrun;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.frdiag.cli.FrDiagnose;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Real torchrun jobs on gloo, one per {@link Scenario}, their Flight Recorder dumps, and fr-diagnose analyze on
 * them in both formats, in-process and through the shipped launcher; also what torch's own analyzer says.
 */
class RealPyTorchJobsTest {
  private static final Logger log = LoggerFactory.getLogger(RealPyTorchJobsTest.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long SUITE_START = System.nanoTime();
  /** The format version torch 2.13 writes. */
  private static final String DUMP_VERSION = "2.10";

  /** A report of fr-diagnose analyze --json, and its exit code. */
  record Analysis(int exitCode, JsonNode report, String err) {
    String verdict() {
      return report.path("verdict").asText();
    }

    String symptom() {
      return report.path("symptom").asText();
    }

    Set<Integer> culprits() {
      Set<Integer> ranks = new TreeSet<>();
      report.path("culprit_ranks").forEach(r -> ranks.add(r.asInt()));
      return ranks;
    }

    /** Verdict, symptom and culprits: what must not depend on how the analysis was reached. */
    String summary() {
      return verdict() + " " + symptom() + " " + culprits();
    }
  }

  /** fr-diagnose analyze -q --json on a folder, through the CLI's own entry point. */
  static Analysis analyze(Path... paths) throws IOException {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    List<String> args = new ArrayList<>(List.of("analyze", "-q", "--json"));
    for (Path p : paths) {
      args.add(p.toString());
    }
    int code = FrDiagnose.run(args.toArray(String[]::new), new PrintWriter(out), new PrintWriter(err));
    return new Analysis(code, JSON.readTree(out.toString()), err.toString());
  }

  @ParameterizedTest
  @EnumSource(Scenario.class)
  void everyRankLeavesAJsonAndAPickleDumpOfItsCollectives(Scenario scenario) throws Exception {
    ScenarioRuns.Run run = ScenarioRuns.of(scenario);
    DumpReader reader = DumpReader.create();
    for (Path folder : List.of(run.json(), run.pickle())) {
      try (Stream<Path> files = Files.list(folder)) {
        assertThat(files.map(f -> f.getFileName().toString()).sorted())
            .as("dumps in %s", folder)
            .containsExactlyInAnyOrderElementsOf(scenario.dumpingRanks().stream().map(r -> "trace_rank_" + r)
                .toList());
      }
      for (int rank : scenario.dumpingRanks()) {
        FlightRecorderDump dump = reader.read(folder.resolve("trace_rank_" + rank));
        assertThat(dump.rank()).isEqualTo(rank);
        assertThat(dump.version()).as("format version of %s", dump.file()).isEqualTo(DUMP_VERSION);
        assertThat(dump.records()).as("entries of %s", dump.file()).isNotEmpty();
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Scenario.class)
  void theJobEndsAsItsFaultMakesItAndLeavesNoProcessBehind(Scenario scenario) {
    ScenarioRuns.Run run = ScenarioRuns.of(scenario);
    switch (scenario.ending()) {
      case FINISHES -> assertThat(run.exitCode()).as("torchrun's exit code").isZero();
      case DIES -> assertThat(run.exitCode()).as("torchrun's exit code").isNotNull().isNotZero();
      case HANGS -> assertThat(run.exitCode()).as("a hung torchrun is killed").isNull();
    }
    // The launcher, its bash and python ranks at least.
    assertThat(run.pids()).hasSizeGreaterThanOrEqualTo(1 + scenario.ranks());
    assertThat(run.pids().stream().filter(pid -> ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)))
        .as("processes of the job still alive").isEmpty();
    assertThat(ProcessTree.runningWith(run.dir().toString())).as("processes naming the job's folder").isEmpty();
  }

  @ParameterizedTest
  @EnumSource(Scenario.class)
  void analyzeReadsEveryDumpAndSaysTheSameOfBothFormats(Scenario scenario) throws Exception {
    ScenarioRuns.Run run = ScenarioRuns.of(scenario);
    int dumps = scenario.dumpingRanks().size();
    Analysis pickle = analyze(run.pickle());
    Analysis json = analyze(run.json());
    for (Analysis a : List.of(pickle, json)) {
      assertThat(a.exitCode()).as(a.err()).isIn(0, 1, 4);
      assertThat(a.report().path("schema").asText()).isEqualTo("frdiag.report/v1");
      List<String> timeline = new ArrayList<>();
      a.report().path("timeline").forEach(t -> timeline.add(t.path("event").asText()));
      assertThat(timeline).anySatisfy(event -> assertThat(event).startsWith("read " + dumps + " dump files"));
    }
    assertThat(json.summary()).isEqualTo(pickle.summary());
    log.info("real-PyTorch suite: fr-diagnose analyze on {}: {} confidence {}", scenario.dirName(),
        pickle.summary(), pickle.report().path("confidence").asText());
  }

  @Test
  void theShippedLauncherReportsWhatTheCommandSaysInProcess() throws Exception {
    ScenarioRuns.Run run = ScenarioRuns.of(Scenario.STALL_DP_RANK2);
    Path launcher = Path.of("..", "bin", "fr-diagnose").toAbsolutePath().normalize();
    Commands.Result r = Commands.run(List.of(launcher.toString(), "analyze", "-q", "--json",
        run.pickle().toString()), run.dir(), Map.of(), run.dir().resolve("launcher-report.json"),
        Duration.ofMinutes(2));
    assertThat(r.exitCode()).as(r.stderr()).isIn(0, 1, 4);
    Analysis shipped = new Analysis(r.exitCode(), JSON.readTree(r.stdout()), r.stderr());
    assertThat(shipped.summary()).isEqualTo(analyze(run.pickle()).summary());
  }

  /**
   * A distribution whose jar was replaced after `mvn package` runs that jar's classes: JDK 25 maps an AOT cache
   * whose jars changed and would run the classes recorded in it, so the launcher must leave the cache out.
   */
  @Test
  void theShippedLauncherRunsTheJarsItHoldsNotAStaleCache(@TempDir Path tmp) throws Exception {
    Path dist;
    try (Stream<Path> built = Files.list(Path.of("..", "dist", "target").toAbsolutePath().normalize())) {
      dist = built.filter(p -> Files.isDirectory(p) && p.getFileName().toString().startsWith("frdiag-"))
          .findFirst().orElseThrow();
    }
    assumeTrue(Files.exists(dist.resolve("lib/frdiag.aot")), "the build found no JDK 25 and wrote no AOT cache");
    Path copy = tmp.resolve(dist.getFileName());
    try (Stream<Path> files = Files.walk(dist)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Files.copy(f, copy.resolve(dist.relativize(f).toString()), StandardCopyOption.COPY_ATTRIBUTES);
      }
    }
    ScenarioRuns.Run run = ScenarioRuns.of(Scenario.STALL_DP_RANK2);
    assertThat(mainClassSource(copy, run, tmp.resolve("before"))).isEqualTo("shared objects file");

    Path cli;
    try (Stream<Path> jars = Files.list(copy.resolve("lib"))) {
      cli = jars.filter(p -> p.getFileName().toString().startsWith("frdiag-cli-")).findFirst().orElseThrow();
    }
    try (FileSystem jar = FileSystems.newFileSystem(cli)) {
      Files.writeString(jar.getPath("frdiag-rebuilt.txt"), "a jar of another build");
    }
    assertThat(mainClassSource(copy, run, tmp.resolve("after"))).startsWith("file:").contains(cli.toString());
  }

  /** Where the JVM took fr-diagnose's main class from, running {@code dist}'s launcher on {@code run}'s dumps. */
  private static String mainClassSource(Path dist, ScenarioRuns.Run run, Path out) throws Exception {
    Files.createDirectories(out);
    Path classes = out.resolve("class-load.txt");
    Commands.Result r = Commands.run(List.of(dist.resolve("bin/fr-diagnose").toString(), "analyze", "-q",
        run.pickle().toString()), out, Map.of("FRDIAG_JAVA_OPTS", "-Xlog:class+load=info:file=" + classes),
        out.resolve("report.txt"), Duration.ofMinutes(2));
    assertThat(r.exitCode()).as(r.stderr()).isIn(0, 1, 4);
    String line = Files.readAllLines(classes).stream().filter(l -> l.contains(" dev.frdiag.cli.FrDiagnose source: "))
        .findFirst().orElseThrow();
    return line.substring(line.indexOf(" source: ") + " source: ".length()).strip();
  }

  /**
   * torchfrtrace on each scenario's pickle folder, for the comparison in docs/DIAGNOSIS.md: its first finding or
   * error, in {@code target/fr-trace.md} and the log.
   */
  @Test
  void torchsOwnAnalyzerIsRecordedForEveryScenario() throws Exception {
    Pattern finding = Pattern.compile("^(\\w+(Error|Exception)\\b.*|.*(Culprit|Not all ranks|has errors|no errors"
        + "|No errors).*)$", Pattern.CASE_INSENSITIVE);
    List<String> rows = new ArrayList<>(List.of("| scenario | torchfrtrace exit | first finding or error |",
        "|---|---|---|"));
    for (Scenario scenario : Scenario.values()) {
      ScenarioRuns.Run run = ScenarioRuns.of(scenario);
      Path output = run.dir().resolve("fr_trace.txt");
      Commands.Result r = Commands.run(List.of(TorchVenv.get().bin("torchfrtrace").toString(), "pickle"),
          run.dir(), Map.of(), output, Duration.ofMinutes(2));
      String first = r.output().lines().filter(l -> finding.matcher(l.strip()).matches()).map(String::strip)
          .findFirst().orElse("(nothing: see " + output + ")");
      assertThat(r.output()).as("torchfrtrace's output on %s", run.pickle()).isNotBlank();
      rows.add("| " + scenario.dirName() + " | " + r.exitCode() + " | `" + first + "` |");
      log.info("real-PyTorch suite: torchfrtrace on {}: exit {}, {}", scenario.dirName(), r.exitCode(), first);
    }
    Files.write(Path.of("target", "fr-trace.md"), rows);
  }

  /** The right verdict of every scenario, from both dump formats. */
  @Nested
  class RightVerdicts {
    @ParameterizedTest
    @EnumSource(Scenario.class)
    void analyzeNamesTheVerdictSymptomAndCulpritsOfWhatHappened(Scenario scenario) throws Exception {
      ScenarioRuns.Run run = ScenarioRuns.of(scenario);
      for (Path folder : List.of(run.pickle(), run.json())) {
        Analysis a = analyze(folder);
        assertThat(a.summary()).as("%s", folder)
            .isEqualTo(scenario.verdict() + " " + scenario.symptom() + " " + new TreeSet<>(scenario.culprits()));
      }
    }

    @ParameterizedTest
    @EnumSource(value = Scenario.class, mode = EnumSource.Mode.MATCH_ALL, names = ".*STALL.*|MISMATCH.*")
    void withTheRanksStacksAnalyzeNamesWhereTheCulpritIsStuck(Scenario scenario) throws Exception {
      ScenarioRuns.Run run = ScenarioRuns.of(scenario);
      Analysis a = analyze(run.json(), run.stacks());
      assertThat(a.summary()).as(a.err())
          .isEqualTo(scenario.verdict() + " " + scenario.symptom() + " " + new TreeSet<>(scenario.culpritsByStacks()));
      if (scenario.symptom().equals("CPU_STALL")) {
        assertThat(a.report().path("culprits")).allSatisfy(c -> assertThat(c.path("stuck_at").asText())
            .startsWith("sleep_forever (train.py:"));
      }
    }
  }

  /**
   * Healthy jobs dumped while they run: each rank's dumps a little apart from its peers', some ranks caught inside a
   * collective for milliseconds. No HANG at 0.5 or above from any moment (DIAGNOSIS.md §3, "A consistent cut" and
   * "The job's rhythm").
   */
  @ParameterizedTest
  @EnumSource(value = Scenario.class, names = ".*DUMPED_MID_RUN", mode = EnumSource.Mode.MATCH_ANY)
  void aHealthyJobDumpedWhileItRunsIsNotCalledHung(Scenario scenario) throws Exception {
    ScenarioRuns.Run run = ScenarioRuns.of(scenario);
    assertThat(scenario.midRunDumps()).hasSize(5);
    for (String moment : scenario.midRunDumps()) {
      for (String format : List.of("json", "pickle")) {
        Path folder = run.dir().resolve(moment).resolve(format);
        Analysis a = analyze(folder);
        double confidence = a.report().path("confidence").asDouble();
        log.info("real-PyTorch suite: fr-diagnose analyze on {} {} {}: {} confidence {}", scenario.dirName(),
            moment, format, a.summary(), confidence);
        assertThat(a.verdict().equals("HANG") && confidence >= 0.5).as("%s: %s at %s", folder, a.summary(),
            confidence).isFalse();
      }
    }
  }

  /** With its training log beside its dumps, the CUDA error a rank raised is the cause, and its teardown is not. */
  @Test
  void theFirstFailureInTheLogIsTheCause() throws Exception {
    ScenarioRuns.Run run = ScenarioRuns.of(Scenario.CUDA_ERROR_RANK1);
    for (Path folder : List.of(run.pickle(), run.json())) {
      Analysis a = analyze(folder, run.dir().resolve("train.log"));
      assertThat(a.summary()).as(a.err()).isEqualTo("HANG GPU_STALL [1]");
    }
  }

  @AfterAll
  static void logTimes() {
    List<ScenarioRuns.Run> runs = ScenarioRuns.done().toList();
    double jobs = runs.stream().mapToLong(r -> r.elapsed().toMillis()).sum() / 1000.0;
    log.info("real-PyTorch suite: {} scenarios, their jobs {} s, the suite {} s", runs.size(),
        String.format("%.1f", jobs), String.format("%.1f", (System.nanoTime() - SUITE_START) / 1e9));
  }
}
