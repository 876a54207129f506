package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** {@code _dump_nccl_trace_json} and the pickle of the same job give the same report (JSON carries no frames). */
class PickleAndJsonTest {
  @TempDir
  Path dir;

  static Stream<Arguments> hangs() {
    return Stream.of(
        Arguments.of(Hangs.job(64, 120, Kind.GPU_STALL, 21).timing(true)),
        Arguments.of(Hangs.job(64, 120, Kind.DTYPE_MISMATCH, 21)),
        // JSON leaves "entries" out when there are none.
        Arguments.of(Hangs.job(64, 120, Kind.EMPTY_ENTRIES, 21)),
        Arguments.of(Hangs.job(64, 120, Kind.FABRIC, 0).timing(true).onlyActive(true)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("hangs")
  void jsonDumpsGiveTheReportThePicklesGive(Hangs.Case c) throws IOException {
    FaultyDumps job = c.build();
    job.write(dir.resolve("pickle"), Hangs.PREFIX, Encoding.PICKLE);
    job.write(dir.resolve("json"), Hangs.PREFIX, Encoding.JSON);
    assertThat(dir.resolve("json").resolve(Hangs.PREFIX + "0.json")).exists();
    assertThat(Files.readString(dir.resolve("json").resolve(Hangs.PREFIX + "0.json"))).startsWith("{");
    Analyze.Result pickle = Hangs.assertDiagnosed(job, dir.resolve("pickle"));
    Analyze.Result json = Hangs.assertDiagnosed(job, dir.resolve("json"));
    assertThat(json.comparable()).isEqualTo(pickle.comparable());
  }
}
