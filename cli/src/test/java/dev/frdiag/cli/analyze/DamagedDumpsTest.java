package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.Evidence;
import dev.frdiag.cli.ExitCode;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.report.Report;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Folders where some files are damaged: each is one line on stderr, and the other ranks are still analysed. */
class DamagedDumpsTest {
  @TempDir
  Path dir;

  /** Rank 35 stalls; rank 20's file is cut in half, rank 21's is text, rank 22's is empty. */
  private void cpuStallWithDamagedFiles() throws IOException {
    Hangs.write(Hangs.job(64, 120, Kind.CPU_STALL, 35), dir, Encoding.PICKLE);
    byte[] whole = Files.readAllBytes(file(20));
    Files.write(file(20), Arrays.copyOf(whole, whole.length / 2));
    Files.writeString(file(21), "garbage, not a dump\n", StandardCharsets.UTF_8);
    Files.write(file(22), new byte[0]);
  }

  private Path file(int rank) {
    return dir.resolve(Hangs.PREFIX + rank);
  }

  @Test
  void eachDamagedFileIsOneLineAndTheOtherRanksAreAnalysed() throws IOException {
    cpuStallWithDamagedFiles();
    Analyze.Result r = Analyze.json(dir);
    assertThat(r.code()).as(r.err()).isEqualTo(ExitCode.HANG);
    List<String> lines = r.errLines();
    assertThat(lines).hasSize(3);
    assertThat(lines.get(0)).startsWith("fr-diagnose: truncated pickle at byte ").endsWith(" (" + file(20) + ")");
    assertThat(lines.get(1)).isEqualTo("fr-diagnose: not a Flight Recorder dump: it starts with byte 0x67, neither a "
        + "pickle (0x80) nor a JSON object ('{') (" + file(21) + ")");
    assertThat(lines.get(2)).isEqualTo("fr-diagnose: not a Flight Recorder dump: the file is empty (" + file(22) + ")");
    Report report = r.report();
    assertThat(report.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.NO_SNAPSHOT);
      assertThat(e.ranks()).containsExactly(20, 21, 22);
    });
    // The readable ranks were analysed: rank 35 is seen never to have issued its step.
    assertThat(report.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.NOT_ISSUED);
      assertThat(e.ranks()).containsExactly(35);
    });
  }

  @Test
  void damagedFilesDoNotOutweighARankProvenToHaveStalled() throws IOException {
    cpuStallWithDamagedFiles();
    Report report = Analyze.json(dir).report();
    assertThat(report.symptom()).as(report.headline()).isEqualTo(Symptom.CPU_STALL);
    assertThat(report.culpritRanks()).containsExactly(35);
  }

  @Test
  void aFolderOfOnlyDamagedDumpsIsNothingToAnalyseNotAHealthyJob() throws IOException {
    Files.write(file(0), new byte[] {(byte) 0x80, 2, 'g', 'a', 'r', 'b'});
    Files.writeString(file(1), "{\"pg_config\": ", StandardCharsets.UTF_8);
    Analyze.Result r = Analyze.run("analyze", dir.toString());
    assertThat(r.code()).isEqualTo(ExitCode.INSUFFICIENT_EVIDENCE);
    assertThat(r.out()).isEmpty();
    assertThat(r.errLines()).hasSize(3).allSatisfy(l -> assertThat(l).startsWith("fr-diagnose: "));
    assertThat(r.errLines().get(0)).endsWith("(" + file(0) + ")");
    assertThat(r.errLines().get(1)).endsWith("(" + file(1) + ")");
    assertThat(r.errLines().get(2)).startsWith("fr-diagnose: nothing to analyse in [" + dir + "]: no readable "
        + "Flight Recorder dump");
  }

  @Test
  void aGarbageFileGivenByNameIsOneLineNotACrash() throws IOException {
    Path garbage = dir.resolve("_dump_3");
    byte[] bytes = new byte[4096];
    new java.util.Random(3).nextBytes(bytes);
    // Starts like a pickle, so it is read as a dump and fails as one.
    bytes[0] = (byte) 0x80;
    bytes[1] = 2;
    Files.write(garbage, bytes);
    Analyze.Result r = Analyze.run("analyze", garbage.toString());
    assertThat(r.code()).isEqualTo(ExitCode.INSUFFICIENT_EVIDENCE);
    assertThat(r.errLines()).hasSize(2);
    assertThat(r.errLines().get(0)).startsWith("fr-diagnose: ").endsWith("(" + garbage + ")")
        .doesNotContain("Exception");
    assertThat(r.errLines().get(1)).startsWith("fr-diagnose: nothing to analyse in ");
  }
}
