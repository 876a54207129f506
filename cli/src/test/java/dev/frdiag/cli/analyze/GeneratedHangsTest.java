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

/**
 * Every kind of hang, in two job shapes: 64 ranks keeping 200 entries each, and 512 ranks (tensor-parallel 8, 4
 * pipeline stages, data-parallel 16) whose short rings are cut in the middle of coalesced groups on the middle
 * stages, as long real rings are cut too. The faulty rank sits in the middle of the job, never rank 0 or the last.
 */
class GeneratedHangsTest {
  /** A job shape and the rank the fault is put on. */
  record Shape(int ranks, int entries, int faulty) {}

  /** Second pipeline stage, last of its tensor-parallel group. */
  static final Shape SMALL = new Shape(64, 200, 35);
  /** Third pipeline stage (of four), in the middle of its tensor-parallel group. */
  static final Shape LARGE = new Shape(512, 64, 300);

  @TempDir
  Path dir;

  static Stream<Arguments> hangs() {
    return Stream.of(SMALL, LARGE).flatMap(s -> Hangs.everyKind(s.ranks(), s.entries(), s.faulty()));
  }

  static Stream<Arguments> orderCases() {
    return Stream.of(Arguments.of(Hangs.job(SMALL.ranks(), SMALL.entries(), Kind.GPU_STALL, SMALL.faulty())
            .timing(true)),
        Arguments.of(Hangs.job(LARGE.ranks(), LARGE.entries(), Kind.CPU_STALL, LARGE.faulty())));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("hangs")
  void namesTheFaultyRankAndWhatWentWrong(Hangs.Case c) {
    FaultyDumps job = Hangs.write(c, dir, Encoding.PICKLE);
    Hangs.assertDiagnosed(job, dir);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("orderCases")
  void theReportDoesNotDependOnTheOrderFilesWereWrittenIn(Hangs.Case c) {
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
    Hangs.Case c = Hangs.job(SMALL.ranks(), SMALL.entries(), Kind.CPU_STALL, SMALL.faulty());
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
