package dev.frdiag.torchrun;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.testing.calibration.ConfidenceBands;
import dev.frdiag.torchrun.RealPyTorchJobsTest.Analysis;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What each confidence means on real jobs: every scenario's dumps in both formats and every moment of the jobs
 * dumped mid-run, each analysis right or wrong against what really happened, counted per confidence band
 * (docs/DIAGNOSIS.md §9, "Calibration"), the held-out split apart. Written to {@code target/calibration.md}.
 */
class ConfidenceCalibrationTest {
  private static final Logger log = LoggerFactory.getLogger(ConfidenceCalibrationTest.class);

  /** One analysis and whether it was right. */
  record Scored(Scenario scenario, String folder, Analysis analysis, boolean right, boolean confidentlyWrong) {
    double confidence() {
      return analysis.report().path("confidence").asDouble();
    }
  }

  @Test
  void noAnswerIsWrongAtNinetyPercentAndNoneIsConfidentlyWrong() throws Exception {
    List<Scored> scored = new ArrayList<>();
    for (Scenario scenario : Scenario.values()) {
      ScenarioRuns.Run run = ScenarioRuns.of(scenario);
      List<Path> folders = new ArrayList<>(List.of(run.pickle(), run.json()));
      for (String moment : scenario.midRunDumps()) {
        folders.add(run.dir().resolve(moment).resolve("json"));
        folders.add(run.dir().resolve(moment).resolve("pickle"));
      }
      for (Path folder : folders) {
        Analysis a = RealPyTorchJobsTest.analyze(folder);
        scored.add(score(scenario, run.dir().relativize(folder).toString(), a));
      }
    }
    String table = "All " + scored.size() + " analyses:\n\n" + table(scored) + "\nHeld-out split ("
        + Scenario.HELD_OUT.size() + " scenarios):\n\n" + table(scored.stream()
        .filter(s -> Scenario.HELD_OUT.contains(s.scenario())).toList());
    Files.writeString(Path.of("target", "calibration.md"), table);
    log.info("real-PyTorch suite: confidence calibration\n{}", table);

    assertThat(scored.stream().filter(s -> !s.right() && s.confidence() >= 0.9).map(this::describe))
        .as("wrong answers at 0.9 or above").isEmpty();
    assertThat(scored.stream().filter(Scored::confidentlyWrong).map(this::describe))
        .as("confident wrong answers").isEmpty();
  }

  /**
   * Right: the verdict, symptom and culprits of what happened; for a healthy job's mid-run dump, NO_HANG. Confidently
   * wrong: a culprit outside the right set at 0.7 or above, HANG at 0.7 or above on a healthy job, NO_HANG at 0.9 or
   * above on a hung one.
   */
  private static Scored score(Scenario scenario, String folder, Analysis a) {
    double confidence = a.report().path("confidence").asDouble();
    boolean healthy = scenario.verdict().equals("NO_HANG");
    boolean right = folder.startsWith("mid-") ? a.verdict().equals("NO_HANG")
        : a.summary().equals(scenario.verdict() + " " + scenario.symptom() + " " + new TreeSet<>(scenario.culprits()));
    Set<Integer> outside = new TreeSet<>(a.culprits());
    outside.removeAll(scenario.culpritsByStacks());
    boolean confidentlyWrong = !outside.isEmpty() && confidence >= 0.7
        || healthy && a.verdict().equals("HANG") && confidence >= 0.7
        || !healthy && a.verdict().equals("NO_HANG") && confidence >= 0.9;
    return new Scored(scenario, folder, a, right, confidentlyWrong);
  }

  private String describe(Scored s) {
    return s.scenario().dirName() + "/" + s.folder() + ": " + s.analysis().summary() + " at " + s.confidence();
  }

  /** Right and wrong per band, as docs/DIAGNOSIS.md §9 shows them. */
  static String table(List<Scored> scored) {
    return ConfidenceBands.table(scored.stream().map(s -> new ConfidenceBands.Answer(s.confidence(), s.right()))
        .toList());
  }
}
