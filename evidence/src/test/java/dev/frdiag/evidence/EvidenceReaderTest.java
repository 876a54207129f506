package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.RankTimeline;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
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
  void aMixedFolderIsReadInOnePassEachFileToldOnceByItsContentWhateverItIsCalled() throws Exception {
    Path traces = Path.of("src", "test", "resources", "pytorch-2.13-traces", "stall_dp_rank2_w4");
    Path gloo = Path.of("src", "test", "resources", "pytorch-2.13-gloo", "stall_dp_rank2_w4");
    for (int r = 0; r < 4; r++) {
      Files.copy(traces.resolve("json").resolve("trace_rank_" + r), dir.resolve("trace_rank_" + r));
      // As export_chrome_trace writes them: plain JSON, named like the dumps beside them.
      gunzip(only(traces.resolve("traces"), "rank" + r + "."), dir.resolve("rank" + r + ".json"));
      Files.copy(gloo.resolve("stacks").resolve("dump_traceback_rank_" + r + ".txt"),
          dir.resolve("dump_traceback_rank_" + r + ".txt"));
    }
    Files.writeString(dir.resolve("train.log"), "[rank2]: torch.distributed.DistBackendError: [../third_party/gloo/"
        + "gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:29500\n");
    Files.writeString(dir.resolve("NOTICE.md"), "Attribution of the files beside this one.\n");
    Map<Path, Integer> told = new ConcurrentHashMap<>();
    Told said = new Told();

    EvidenceReader.Gathered g = EvidenceReader.builder().classifier(f -> {
      told.merge(f, 1, Integer::sum);
      return InputKind.of(f);
    }).build().read(List.of(dir), said);

    try (Stream<Path> files = Files.list(dir)) {
      assertThat(told).containsOnlyKeys(files.toList()).allSatisfy((file, times) -> assertThat(times).isOne());
    }
    assertThat(g.dumpFiles()).isEqualTo(4);
    assertThat(g.traceFiles()).isEqualTo(4);
    assertThat(g.logFiles()).isOne();
    JobEvidence e = g.evidence().orElseThrow();
    assertThat(e.ranks()).extracting(r -> r.rank() + " " + r.records().isEmpty() + " " + r.stacks().getSource())
        .containsExactly("0 false dump_traceback_rank_0.txt", "1 false dump_traceback_rank_1.txt",
            "2 false dump_traceback_rank_2.txt", "3 false dump_traceback_rank_3.txt");
    assertThat(g.timelines().orElseThrow().ranks()).extracting(RankTimeline::rank).containsExactly(0, 1, 2, 3);
    // One batch of dumps, then the folder's other files; a file that holds nothing known is noted, not read.
    assertThat(said.said).startsWith("dumps 4").contains("files 9", "traces 4")
        .endsWith("note: ignored NOTICE.md: not named <prefix><rank>").noneMatch(s -> s.startsWith("problem"));
  }

  @Test
  void aFolderOfLogsIsReadAndOneWithNothingKnownStopsTheReadSayingSo() throws Exception {
    Path logs = Files.createDirectories(dir.resolve("logs"));
    Files.writeString(logs.resolve("node-a.log"), "node-a:1234:1234 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n");
    Path notes = Files.createDirectories(dir.resolve("notes"));
    Files.writeString(notes.resolve("rank_0"), "lunch at noon\n");
    Files.createDirectories(notes.resolve("run-1"));

    EvidenceReader.Gathered g = EvidenceReader.builder().build().read(List.of(logs), new Told());

    assertThat(g.logFiles()).isOne();
    assertThat(g.evidence()).isPresent();
    assertThatThrownBy(() -> EvidenceReader.builder().build().read(List.of(notes), new Told()))
        .isInstanceOf(UnusableInputException.class).hasMessage("no Flight Recorder dumps: no file holds a dump, a "
            + "profiler trace, a stack dump or a log this reader knows; the folders in it are not looked into ("
            + notes + ")");
  }

  @Test
  void dumpsNamedWithTwoPrefixesStopTheReadUntilOneIsChosen() throws Exception {
    Path gloo = Path.of("src", "test", "resources", "pytorch-2.13-gloo", "stall_dp_rank2_w4", "json");
    for (int r = 0; r < 4; r++) {
      Files.copy(gloo.resolve("trace_rank_" + r), dir.resolve((r < 2 ? "_dump_" : "trace_rank_") + r));
    }

    assertThatThrownBy(() -> EvidenceReader.builder().build().read(List.of(dir), new Told()))
        .isInstanceOf(UnusableInputException.class).hasMessage("cannot tell which files are the dumps: their names "
            + "have 2 different prefixes ('_dump_' (2 files), 'trace_rank_' (2 files)); choose one with --prefix ("
            + dir + ")");
    Told told = new Told();
    EvidenceReader.Gathered g = EvidenceReader.builder().dumpPrefix("trace_rank_").build().read(List.of(dir), told);
    assertThat(g.evidence().orElseThrow().ranks()).extracting(r -> r.rank()).containsExactly(2, 3);
    assertThat(told.said).contains("note: ignored _dump_0: its name does not start with 'trace_rank_'");
  }

  private static Path only(Path folder, String prefix) throws Exception {
    try (Stream<Path> files = Files.list(folder)) {
      return files.filter(f -> f.getFileName().toString().startsWith(prefix)).reduce((a, b) -> {
        throw new IllegalStateException("two files start with " + prefix + ": " + a + ", " + b);
      }).orElseThrow();
    }
  }

  private static void gunzip(Path from, Path to) throws Exception {
    try (InputStream in = new GZIPInputStream(Files.newInputStream(from))) {
      Files.copy(in, to);
    }
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
