package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.Evidence;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Every kind of hang in a 64-rank job whose ranks keep 200 entries each: the faulty rank and the symptom. */
class GeneratedHangsTest {
  private static final int RANKS = 64;
  private static final int ENTRIES = 200;
  /** Second pipeline stage, last of its tensor-parallel group: no rank 0 or last-rank luck. */
  private static final int FAULTY = 35;

  @TempDir
  Path dir;

  static Stream<Arguments> hangs() {
    return Hangs.everyKind(RANKS, ENTRIES, FAULTY);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("hangs")
  void namesTheFaultyRankAndWhatWentWrong(Hangs.Case c) {
    FaultyDumps job = Hangs.write(c, dir, Encoding.PICKLE);
    Hangs.assertDiagnosed(job, dir);
  }

  @Test
  void theReportDoesNotDependOnTheOrderFilesWereWrittenIn() {
    Hangs.Case c = Hangs.job(RANKS, ENTRIES, Kind.GPU_STALL, FAULTY).timing(true);
    Path first = dir.resolve("first");
    Path second = dir.resolve("second");
    FaultyDumps one = Hangs.write(c.seed(1), first, Encoding.PICKLE);
    FaultyDumps two = Hangs.write(c.seed(2), second, Encoding.PICKLE);
    Analyze.Result a = Hangs.assertDiagnosed(one, first);
    Analyze.Result b = Hangs.assertDiagnosed(two, second);
    assertThat(b.comparable()).isEqualTo(a.comparable());
    assertThat(a.report().culprits()).hasSize(1);
  }

  @Test
  void aRankThatNeverIssuedIsNamedWithTheCollectiveItsPeersWaitIn() {
    Hangs.Case c = Hangs.job(RANKS, ENTRIES, Kind.CPU_STALL, FAULTY);
    Analyze.Result r = Hangs.assertDiagnosed(Hangs.write(c, dir, Encoding.PICKLE), dir);
    // Rank 35 is the last of tensor-parallel group 32-35, whose first op of the step it never issued.
    assertThat(r.report().headline()).startsWith("Rank 35 never issued _all_gather_base (")
        .contains("TENSOR_MODEL_PARALLEL_GROUP").endsWith("that ranks 32-34 wait in: CPU-side stall.");
    assertThat(r.report().evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.NOT_ISSUED);
      assertThat(e.ranks()).isEqualTo(List.of(35));
    });
  }
}
