package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every kind of hang in a 512-rank job (tensor-parallel 8, 4 pipeline stages, data-parallel 16). The rings
 * are short to keep the test fast, which also cuts them in the middle of coalesced groups on the middle
 * stages, as long real rings are cut too.
 */
class LargeJobHangsTest {
  private static final int RANKS = 512;
  private static final int ENTRIES = 64;
  /** Third pipeline stage (of four), in the middle of its tensor-parallel group. */
  private static final int FAULTY = 300;

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
    Hangs.Case c = Hangs.job(RANKS, ENTRIES, Kind.CPU_STALL, FAULTY);
    FaultyDumps one = Hangs.write(c.seed(7), dir.resolve("first"), Encoding.PICKLE);
    FaultyDumps two = Hangs.write(c.seed(8), dir.resolve("second"), Encoding.PICKLE);
    Analyze.Result a = Hangs.assertDiagnosed(one, dir.resolve("first"));
    Analyze.Result b = Hangs.assertDiagnosed(two, dir.resolve("second"));
    assertThat(b.comparable()).isEqualTo(a.comparable());
  }
}
