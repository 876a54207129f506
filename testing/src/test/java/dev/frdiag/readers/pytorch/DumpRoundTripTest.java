package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.testing.dumps.DumpWriter;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DumpRoundTripTest {
  private final DumpReader reader = DumpReader.create();

  @ParameterizedTest
  @ValueSource(strings = {"2.3", "2.6", "2.9", "2.10"})
  void pickleWrittenByTheGeneratorReadsBackUnchanged(String version) throws Exception {
    for (FlightRecorderDump dump : SyntheticDumps.job(version, true)) {
      FlightRecorderDump back = reader.parse(DumpWriter.toPickle(dump), dump.file(), dump.rank());
      assertThat(back).isEqualTo(dump);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"2.3", "2.6", "2.9", "2.10"})
  void jsonWrittenByTheGeneratorReadsBackUnchanged(String version) throws Exception {
    for (FlightRecorderDump dump : SyntheticDumps.job(version, false)) {
      FlightRecorderDump back = reader.parse(DumpWriter.toJson(dump), dump.file(), dump.rank());
      assertThat(back).isEqualTo(dump);
    }
  }

  @Test
  void jsonAndPickleOfTheSameDataReadIdentically() throws Exception {
    for (FlightRecorderDump dump : SyntheticDumps.job("2.9", false)) {
      FlightRecorderDump fromPickle = reader.parse(DumpWriter.toPickle(dump), Path.of("a", "_dump_1"), dump.rank());
      FlightRecorderDump fromJson = reader.parse(DumpWriter.toJson(dump), Path.of("a", "_dump_1"), dump.rank());
      assertThat(fromJson).isEqualTo(fromPickle);
    }
    // The real dumps too: their JSON twin (as nlohmann would write it) reads as the pickle does.
    for (String folder : List.of("nvrx_gpu_error_1st", "nvrx_lock_gil_1st")) {
      for (FlightRecorderDump dump : reader.readFolder(RealDumpsTest.sample(folder), Optional.empty()).dumps()) {
        FlightRecorderDump fromJson = reader.parse(DumpWriter.toJson(dump), dump.file(), dump.rank());
        assertThat(fromJson).isEqualTo(dump);
      }
    }
  }

  @Test
  void realPicklesAreWrittenAgainByteForByte() throws Exception {
    // What the writer lays out (key order, memo, int encodings, tuples) is what PyTorch's pickler wrote.
    for (String folder : List.of("nvrx_gpu_error_1st", "nvrx_lock_gil_1st")) {
      for (FlightRecorderDump dump : reader.readFolder(RealDumpsTest.sample(folder), Optional.empty()).dumps()) {
        assertThat(DumpWriter.toPickle(dump)).as("%s", dump.file()).isEqualTo(Files.readAllBytes(dump.file()));
      }
    }
  }

  @Test
  void pickleUsesOnlyTheOpcodesOfPyTorchsPickler() {
    Set<Integer> expected = Set.of(PickleOpcodes.PROTO, PickleOpcodes.EMPTY_DICT, PickleOpcodes.MARK,
        PickleOpcodes.SETITEMS, PickleOpcodes.BINUNICODE, PickleOpcodes.BINPUT, PickleOpcodes.BINGET,
        PickleOpcodes.LONG_BINPUT, PickleOpcodes.LONG_BINGET, PickleOpcodes.EMPTY_LIST, PickleOpcodes.APPENDS,
        PickleOpcodes.BININT1, PickleOpcodes.BININT2, PickleOpcodes.BININT, PickleOpcodes.LONG1,
        PickleOpcodes.NONE, PickleOpcodes.NEWTRUE, PickleOpcodes.NEWFALSE, PickleOpcodes.TUPLE2,
        PickleOpcodes.BINFLOAT, PickleOpcodes.STOP);
    Set<Integer> used = new HashSet<>();
    for (FlightRecorderDump dump : SyntheticDumps.job("2.9", true)) {
      byte[] pickle = DumpWriter.toPickle(dump);
      Pickles.opcodeOffsets(pickle).forEach(at -> used.add(pickle[at] & 0xff));
    }
    assertThat(used).containsExactlyInAnyOrderElementsOf(expected);
  }

  @Test
  void jsonLooksLikeNlohmannsOutput() throws Exception {
    FlightRecorderDump dump = SyntheticDumps.rank(3, "2.9", false);
    byte[] json = DumpWriter.toJson(dump);
    String text = new String(json, StandardCharsets.UTF_8);
    assertThat(text).startsWith("{\"entries\":[{\"collective_seq_id\":41,");
    assertThat(text).doesNotContain("\": ").doesNotContain("\n").doesNotContain("frames");
    JsonNode tree = JsonDumps.MAPPER.readTree(json);
    assertThat(tree.path("pg_status").path("0").path("last_started_collective").isTextual()).isTrue();
    assertThat(tree.path("pg_status").path("0").path("last_started_collective").asText()).isEqualTo("-1");
    assertThat(tree.path("entries").path(0).path("process_group").isArray()).isTrue();
    assertThat(tree.path("entries").path(2).path("time_discovered_started_ns").asLong()).isZero();
    assertThat(tree.path("nccl_version").asText()).isEqualTo("2.27.3");

    FlightRecorderDump empty = new FlightRecorderDump(dump.file(), 3, "2.10", "2.28.1", dump.processGroups(),
        List.of(), dump.progress(), dump.frames(), List.of());
    JsonNode emptyTree = JsonDumps.MAPPER.readTree(DumpWriter.toJson(empty));
    assertThat(emptyTree.has("entries")).isFalse();
    assertThat(emptyTree.path("comm_lib_version").asText()).isEqualTo("2.28.1");
    assertThat(reader.parse(DumpWriter.toJson(empty), dump.file(), 3)).isEqualTo(empty);
  }

  @Test
  void p2pNamesUseGroupRanksInTheGroupsOwnOrder() throws Exception {
    // Group '10' lists its members as [5, 0, 1]: rank 0 is group rank 1 and sends to group rank 2 (rank 1).
    FlightRecorderDump dump = SyntheticDumps.rank(0, "2.9", false);
    Object tree = Pickles.decode(DumpWriter.toPickle(dump));
    List<String> names = new ArrayList<>();
    for (Object e : (List<?>) ((java.util.Map<?, ?>) tree).get("entries")) {
      names.add((String) ((java.util.Map<?, ?>) e).get("profiling_name"));
    }
    assertThat(names).containsExactly("nccl:all_reduce", "nccl:_all_gather_base", "nccl:send 0->1",
        "nccl:coalesced", "gloo:broadcast", "ncclx:all_to_all", "xccl:send 1->2");
    CollectiveRecord send = reader.parse(DumpWriter.toPickle(dump), dump.file(), 0).records().get(6);
    assertThat(send.getPeer()).isEqualTo(1);
    ProcessGroup expert = dump.processGroup("10");
    assertThat(expert.getGlobalRankStride()).isZero();
  }

  @Test
  void writesFilesThatTheFolderReaderFinds(@TempDir Path dir) throws Exception {
    for (FlightRecorderDump dump : SyntheticDumps.job("2.10", true)) {
      DumpWriter.write(dump, dir, DumpReader.DEFAULT_PREFIX,
          dump.rank() % 2 == 0 ? Encoding.PICKLE : Encoding.JSON);
    }
    DumpFolder folder = reader.readFolder(dir, Optional.empty());
    assertThat(folder.prefix()).isEqualTo(DumpReader.DEFAULT_PREFIX);
    assertThat(folder.failures()).isEmpty();
    assertThat(folder.dumps()).extracting(d -> d.file().getFileName().toString()).containsExactly(
        "comm_lib_trace_rank_0", "comm_lib_trace_rank_1.json", "comm_lib_trace_rank_2",
        "comm_lib_trace_rank_3.json", "comm_lib_trace_rank_4", "comm_lib_trace_rank_5.json",
        "comm_lib_trace_rank_6", "comm_lib_trace_rank_7.json");
    // JSON carries no frames, so only the pickled ranks keep theirs.
    assertThat(folder.dumps().get(0).frames()).isNotEmpty();
    assertThat(folder.dumps().get(1).frames()).isEmpty();
  }
}
