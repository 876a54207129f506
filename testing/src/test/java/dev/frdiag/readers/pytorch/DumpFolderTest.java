package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.testing.dumps.DumpWriter;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DumpFolderTest {
  private final DumpReader reader = DumpReader.create();

  @ParameterizedTest
  @CsvSource({
      "_dump_12, 12",
      "comm_lib_trace_rank_3, 3",
      "nccl_trace_rank_0, 0",
      "nccl_trace_rank_container-node07_40, 40",
      "nccl_trace_rank_7.json, 7",
      "trace_rank_007, 7",
      "42, 42",
  })
  void rankIsTheNumberAtTheEndOfTheFileName(String name, int rank) {
    assertThat(DumpReader.rankFromFileName(name)).hasValue(rank);
  }

  @ParameterizedTest
  @CsvSource({"fault_injection.log", "NOTICE.md", "nccl_trace_rank_", "nccl_trace_rank_3.pipe",
      "nccl_trace_rank_3.tmp", "core_12345678901"})
  void namesWithoutATrailingRankHaveNone(String name) {
    assertThat(DumpReader.rankFromFileName(name)).isEmpty();
  }

  @Test
  void aGivenPrefixTakesTheRankFromWhatFollowsIt() {
    assertThat(DumpReader.rankFromFileName("nccl_trace_rank_container-node07_40", "nccl_trace_rank_")).hasValue(40);
    assertThat(DumpReader.rankFromFileName("nccl_trace_rank_5.json", "nccl_trace_rank_")).hasValue(5);
    assertThat(DumpReader.rankFromFileName("_dump_3", "nccl_trace_rank_")).isEqualTo(OptionalInt.empty());
  }

  @Test
  void readingOneFileTakesItsRankFromItsName(@TempDir Path dir) throws Exception {
    Path file = DumpWriter.write(SyntheticDumps.rank(5, "2.9", false), dir, "nccl_trace_rank_container-node07_",
        Encoding.PICKLE);
    assertThat(reader.read(file).rank()).isEqualTo(5);
    Path renamed = Files.move(file, dir.resolve("dump.pickle"));
    assertThatThrownBy(() -> reader.read(renamed))
        .isInstanceOf(DumpFormatException.class)
        .hasMessage("cannot tell the rank from the file name: expected <prefix><rank>, such as"
            + " comm_lib_trace_rank_3 or _dump_3 (" + renamed + ")");
    assertThat(reader.read(renamed, 5).rank()).isEqualTo(5);
  }

  @Test
  void leavesOutFilesThatAreNotDumpsWithANote(@TempDir Path dir) throws Exception {
    writeJob(dir, "_dump_", 4);
    Files.writeString(dir.resolve("NOTICE.md"), "attribution");
    Files.writeString(dir.resolve("fault_injection.log"), "Fault ranks: [1]");
    Files.writeString(dir.resolve("core.12345"), "ELF core");
    Files.createDirectory(dir.resolve("sub7"));
    DumpFolder folder = reader.readFolder(dir, Optional.empty());
    assertThat(folder.dumps()).extracting(FlightRecorderDump::rank).containsExactly(0, 1, 2, 3);
    assertThat(folder.notes()).containsExactlyInAnyOrder(
        "ignored NOTICE.md: not named <prefix><rank>",
        "ignored fault_injection.log: not named <prefix><rank>",
        "ignored sub7: not a regular file",
        "ignored 1 file(s) named 'core.<n>': they do not start like a pickle or a JSON object");
  }

  @Test
  void oneCorruptFileDoesNotStopTheOthers(@TempDir Path dir) throws Exception {
    writeJob(dir, "_dump_", 4);
    Path two = dir.resolve("_dump_2");
    byte[] bytes = Files.readAllBytes(two);
    Files.write(two, Arrays.copyOf(bytes, 812));
    DumpFolder folder = reader.readFolder(dir, Optional.empty());
    assertThat(folder.files()).extracting(DumpFileResult::rank).containsExactly(0, 1, 2, 3);
    assertThat(folder.dumps()).extracting(FlightRecorderDump::rank).containsExactly(0, 1, 3);
    assertThat(folder.failures()).singleElement().satisfies(f -> {
      assertThat(f.file()).isEqualTo(two);
      assertThat(f.error().getMessage())
          .isEqualTo("truncated pickle at byte 807 of 812: BINFLOAT needs 8 more bytes but 4 remain (" + two + ")");
      assertThat(f.error().file()).isEqualTo(two);
    });
  }

  @Test
  void twoPrefixesAreAmbiguousUntilOneIsChosen(@TempDir Path dir) throws Exception {
    writeJob(dir, "_dump_", 4);
    writeJob(dir, "nccl_trace_rank_", 4);
    assertThatThrownBy(() -> reader.readFolder(dir, Optional.empty()))
        .isInstanceOf(DumpFormatException.class)
        .hasMessage("cannot tell which files are the dumps: their names have 2 different prefixes ('_dump_'"
            + " (4 files), 'nccl_trace_rank_' (4 files)); choose one with --prefix (" + dir + ")");
    DumpFolder folder = reader.readFolder(dir, Optional.of("nccl_trace_rank_"));
    assertThat(folder.prefix()).isEqualTo("nccl_trace_rank_");
    assertThat(folder.dumps()).extracting(d -> d.file().getFileName().toString())
        .containsExactly("nccl_trace_rank_0", "nccl_trace_rank_1", "nccl_trace_rank_2", "nccl_trace_rank_3");
    assertThat(folder.notes()).contains("ignored _dump_0: its name does not start with 'nccl_trace_rank_'");
    // The prefix as TORCH_FR_DUMP_TEMP_FILE spells it, with its directory, works the same.
    assertThat(reader.readFolder(dir, Optional.of("/tmp/nccl_trace_rank_")).dumps()).hasSize(4);
  }

  @Test
  void hostNamesInTheNamesNeedAPrefixAndTheMessageSuggestsOne(@TempDir Path dir) throws Exception {
    // pytorch/pytorch#140879: nccl_trace_rank_container-node07_40.
    for (FlightRecorderDump d : SyntheticDumps.job("2.9", false)) {
      DumpWriter.write(d, dir, "nccl_trace_rank_container-node0" + (7 + d.rank() / 4) + "_", Encoding.PICKLE);
    }
    assertThatThrownBy(() -> reader.readFolder(dir, Optional.empty()))
        .isInstanceOf(DumpFormatException.class)
        .hasMessageContaining("2 different prefixes ('nccl_trace_rank_container-node07_' (4 files),"
            + " 'nccl_trace_rank_container-node08_' (4 files)); choose one with --prefix, or --prefix"
            + " 'nccl_trace_rank_container-node' if they are all one job's dumps with host names in them");
    DumpFolder folder = reader.readFolder(dir, Optional.of("nccl_trace_rank_"));
    assertThat(folder.failures()).isEmpty();
    assertThat(folder.dumps()).extracting(FlightRecorderDump::rank).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
  }

  @Test
  void twoFilesForOneRankAreBothReadAndNoted(@TempDir Path dir) throws Exception {
    writeJob(dir, "_dump_", 2);
    DumpWriter.write(SyntheticDumps.rank(1, "2.9", false), dir, "_dump_", Encoding.JSON);
    DumpFolder folder = reader.readFolder(dir, Optional.empty());
    assertThat(folder.files()).extracting(DumpFileResult::rank).containsExactly(0, 1, 1);
    assertThat(folder.notes()).containsExactly("rank 1 has more than one file: _dump_1, _dump_1.json");
  }

  @Test
  void aFolderWithoutDumpsIsAnError(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("README.md"), "nothing here", StandardCharsets.UTF_8);
    assertThatThrownBy(() -> reader.readFolder(dir, Optional.empty()))
        .isInstanceOf(DumpFormatException.class)
        .hasMessage("no Flight Recorder dumps: no file is named <prefix><rank> (" + dir + ")");
    assertThatThrownBy(() -> reader.readFolder(dir.resolve("missing"), Optional.empty()))
        .hasMessage("no such directory (" + dir.resolve("missing") + ")");
  }

  @Test
  void refusesFilesOverTheSizeLimitBeforeReadingThem(@TempDir Path dir) throws Exception {
    Path file = DumpWriter.write(SyntheticDumps.rank(0, "2.9", true), dir, "_dump_", Encoding.PICKLE);
    long size = Files.size(file);
    DumpReader small = DumpReader.builder().maxFileBytes(1000).build();
    assertThatThrownBy(() -> small.read(file))
        .isInstanceOf(DumpFormatException.class)
        .hasMessage("the file is " + size + " bytes, over the limit of 1000 bytes for a dump (" + file + ")");
    assertThatThrownBy(() -> DumpReader.builder().maxFileBytes(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxFileBytes must be in 1..2147483639, got 0");
    assertThat(DumpReader.create().maxFileBytes()).isEqualTo(1L << 30);
  }

  private static void writeJob(Path dir, String prefix, int ranks) throws Exception {
    for (int r = 0; r < ranks; r++) {
      DumpWriter.write(SyntheticDumps.rank(r, "2.9", false), dir, prefix, Encoding.PICKLE);
    }
  }
}
