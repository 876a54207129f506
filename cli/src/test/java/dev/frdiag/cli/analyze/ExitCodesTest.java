package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.cli.ExitCode;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The documented exit codes of {@code fr-diagnose analyze}, which scripts and CI rely on. */
class ExitCodesTest {
  @TempDir
  Path dir;

  @Test
  void aDiagnosedHangIsOne() {
    Hangs.write(Hangs.job(64, 60, Kind.GPU_STALL, 9).timing(true), dir, Encoding.PICKLE);
    Analyze.Result r = Analyze.run("analyze", "-q", dir.toString());
    assertThat(r.code()).as(r.err()).isEqualTo(ExitCode.HANG).isEqualTo(1);
    assertThat(r.out()).startsWith("Rank 9 issued _all_gather_base (");
  }

  @Test
  void aHangTheEvidenceCannotExplainIsFour() {
    // Every rank issued the world all_reduce and none completed it; without start events a fabric fault and a
    // GPU stall look the same.
    Hangs.write(Hangs.job(64, 60, Kind.FABRIC, 0), dir, Encoding.PICKLE);
    Analyze.Result r = Analyze.json(dir);
    assertThat(r.code()).as(r.err()).isEqualTo(ExitCode.INSUFFICIENT_EVIDENCE).isEqualTo(4);
    assertThat(r.report().verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(r.report().headline()).contains("TORCH_NCCL_ENABLE_TIMING=1");
  }

  @Test
  void aPathThatDoesNotExistIsTwo() {
    Path missing = dir.resolve("no-such-dumps");
    Analyze.Result r = Analyze.run("analyze", missing.toString());
    assertThat(r.code()).isEqualTo(ExitCode.USAGE).isEqualTo(2);
    assertThat(r.err()).isEqualTo("fr-diagnose: " + missing + ": no such file or directory\n");
    assertThat(r.out()).isEmpty();
  }
}
