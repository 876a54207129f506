package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.analysis.JobEvidence;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EvidenceReaderTest {
  @TempDir
  Path dir;

  /** What a reader told, in order. */
  private static final class Told implements ReadProgress {
    final List<String> said = new ArrayList<>();

    @Override
    public Batch batch(String label, int total) {
      said.add(label + " " + total);
      return new Batch() {
        @Override
        public void step() {
          said.add("step");
        }

        @Override
        public void close() {
          said.add("done");
        }
      };
    }

    @Override
    public void problem(String message) {
      said.add("problem: " + message);
    }

    @Override
    public void note(String note) {
      said.add("note: " + note);
    }
  }

  @Test
  void aFolderOfDumpsIsOneJobsEvidenceReadInBatchesWhatItLeftOutNotedLast() throws Exception {
    Path folder = Path.of("..", "testing", "src", "test", "resources", "fr_dumps", "nvrx_lock_gil_1st");
    Told told = new Told();

    EvidenceReader.Gathered g = EvidenceReader.builder().job("j").build().read(List.of(folder), told);

    assertThat(g.dumpFiles()).isEqualTo(16);
    assertThat(g.logFiles()).isZero();
    JobEvidence e = g.evidence().orElseThrow();
    assertThat(e.jobId()).isEqualTo("j");
    assertThat(e.ranks()).hasSize(16);
    List<String> steps = new ArrayList<>(List.of("dumps 16"));
    steps.addAll(Collections.nCopies(16, "step"));
    steps.addAll(List.of("done", "files 0", "done", "note: ignored fault_injection.log: not named <prefix><rank>"));
    assertThat(told.said).containsExactlyElementsOf(steps);
  }

  @Test
  void stackDumpsBesideDumpsJoinTheirRanksEvidenceAndOneWithoutARankIsReported() throws Exception {
    Path gloo = Path.of("src", "test", "resources", "pytorch-2.13-gloo", "pp_stall_rank2_w4");
    for (int r = 0; r < 4; r++) {
      Files.copy(gloo.resolve("json").resolve("trace_rank_" + r), dir.resolve("trace_rank_" + r));
    }
    Files.copy(gloo.resolve("stacks").resolve("dump_traceback_rank_2.txt"), dir.resolve("stacks_2.txt"));
    Path noRank = Files.copy(gloo.resolve("stacks").resolve("dump_traceback_rank_0.txt"), dir.resolve("stacks.txt"));
    Told told = new Told();

    JobEvidence e = EvidenceReader.builder().build().read(List.of(dir), told).evidence().orElseThrow();

    assertThat(e.ranks()).extracting(r -> r.stacks().getThreadsCount()).containsExactly(0, 0, 2, 0);
    assertThat(e.ranks().get(2).stacks().getSource()).isEqualTo("stacks_2.txt");
    assertThat(told.said).contains("problem: skipping " + noRank + " as a stack dump: its name does not tell whose "
        + "it is (name it <anything>_<rank>, e.g. dump_traceback_rank_2.txt); reading it as a log")
        .noneMatch(s -> s.contains("ignored stacks_2.txt"));
  }

  @Test
  void aPathThatIsNotThereStopsTheRead() {
    Path missing = dir.resolve("nope");
    assertThatThrownBy(() -> EvidenceReader.builder().build().read(List.of(missing), ReadProgress.SILENT))
        .isInstanceOf(UnusableInputException.class).hasMessage(missing + ": no such file or directory");
  }

  @Test
  void filesThatSayNothingGiveNoEvidenceAndAreNoted() throws Exception {
    Path notes = Files.writeString(dir.resolve("notes.txt"), "lunch at noon\n");
    Told told = new Told();

    EvidenceReader.Gathered g = EvidenceReader.builder().build().read(List.of(notes), told);

    assertThat(g.evidence()).isEmpty();
    assertThat(told.said).containsExactly("files 1", "step", "done",
        "note: " + notes + ": not a Flight Recorder dump, stack dump or log this reader knows; skipped ("
            + EvidenceReader.LOOKED_FOR + "; found text starting \"lunch at noon\")");
  }

  @Test
  void aQuotedGlobReadsWhatItMatchesAndOneThatMatchesNothingSaysSo() throws Exception {
    Path folder = Path.of("..", "testing", "src", "test", "resources", "fr_dumps", "nvrx_lock_gil_1st");
    Path ranks = Files.createDirectories(dir.resolve("node-a"));
    for (int r = 0; r < 16; r++) {
      Path dump = folder.resolve("_dump_" + r);
      if (Files.exists(dump)) {
        Files.copy(dump, ranks.resolve("_dump_" + r));
      }
    }
    long copied;
    try (var listed = Files.list(ranks)) {
      copied = listed.count();
    }

    EvidenceReader.Gathered g = EvidenceReader.builder().build()
        .read(List.of(dir.resolve("node-*").resolve("_dump_*")), new Told());

    assertThat(copied).isEqualTo(16);
    assertThat(g.dumpFiles() + g.logFiles()).isPositive();
    assertThat(g.evidence().orElseThrow().ranks()).hasSize(16);
    assertThatThrownBy(() -> EvidenceReader.builder().build().read(List.of(dir.resolve("node-z*")), new Told()))
        .isInstanceOf(UnusableInputException.class)
        .hasMessage(dir.resolve("node-z*") + ": no file or folder matches");
    assertThatThrownBy(() -> EvidenceReader.builder().build().read(List.of(dir.resolve("gone").resolve("x*")),
        new Told())).isInstanceOf(UnusableInputException.class)
        .hasMessage(dir.resolve("gone").resolve("x*") + ": no file or folder matches (" + dir.resolve("gone")
            + " is no folder)");
  }
}
