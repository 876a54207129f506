package dev.frdiag.torchrun;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Real torch profiler traces of real gloo jobs (train.py with PROFILE_STEPS, torch.profiler with CPU activities,
 * written by tensorboard_trace_handler or, with TRACE_EXPORT=chrome, by export_chrome_trace as rank&lt;r&gt;.json):
 * fr-diagnose analyze names the rank a slow fault slows, and none in a healthy run, whatever the files are called.
 */
class ProfilerTracesJobsTest {
  private static final Logger log = LoggerFactory.getLogger(ProfilerTracesJobsTest.class);

  @ParameterizedTest
  @EnumSource(value = Scenario.class, names = {"HEALTHY", "SLOW_RANK2"})
  void analyzeOnEachRanksTraceNamesTheStragglerOrNone(Scenario scenario) throws Exception {
    ScenarioRuns.Run run = ScenarioRuns.of(scenario);
    boolean chrome = scenario.env().getOrDefault("TRACE_EXPORT", "tensorboard").equals("chrome");
    try (Stream<java.nio.file.Path> traces = Files.list(run.traces())) {
      // export_chrome_trace's names are those a folder of dumps could have: only their content tells them apart.
      assertThat(traces.map(p -> p.getFileName().toString()))
          .as(chrome ? "export_chrome_trace's files" : "tensorboard_trace_handler's files").hasSize(scenario.ranks())
          .allSatisfy(n -> assertThat(n).matches(chrome ? "rank\\d\\.json" : "rank\\d\\.\\d+\\.pt\\.trace\\.json"));
    }

    RealPyTorchJobsTest.Analysis a = RealPyTorchJobsTest.analyze(run.traces());

    if (scenario.stragglers().isEmpty()) {
      assertThat(a.summary()).as(a.err()).isEqualTo("NO_HANG NONE []");
      assertThat(a.exitCode()).isZero();
    } else {
      assertThat(a.summary()).as(a.err()).isEqualTo("SLOW STRAGGLER " + scenario.stragglers());
      assertThat(a.exitCode()).isEqualTo(7);
      assertThat(a.report().path("headline").asText()).endsWith("it issues them late (CPU side).");
    }
    log.info("real-PyTorch suite: fr-diagnose analyze on {}'s traces: {} confidence {}", scenario.dirName(),
        a.summary(), a.report().path("confidence").asText());
  }
}
