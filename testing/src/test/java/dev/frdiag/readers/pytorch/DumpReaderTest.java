package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.testing.dumps.DumpWriter;
import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How the reader interprets dumps, and the exact messages users see when it cannot. */
class DumpReaderTest {
  private static final Path FILE = Path.of("dumps", "nccl_trace_rank_3");

  private final DumpReader reader = DumpReader.create();

  @Test
  void aLargeFileThatIsNoDumpFailsOnItsFirstBytesAndASmallOneWithTheSameMessage(@TempDir Path dir) throws Exception {
    com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    for (long size : List.of(DumpReader.PREFIX_CHECKED_ABOVE + 1, 64L * 1024)) {
      Path file = dir.resolve("nccl_trace_rank_" + size);
      byte[] junk = new byte[(int) size];
      junk[0] = (byte) PickleOpcodes.PROTO;
      junk[1] = 2;
      junk[2] = (byte) 0xff;
      Files.write(file, junk);
      long before = threads.getCurrentThreadAllocatedBytes();
      assertThatThrownBy(() -> reader.read(file)).isInstanceOf(DumpFormatException.class)
          .hasMessage("invalid pickle opcode 0xff at byte 2 (" + file + ")");
      if (size > DumpReader.PREFIX_CHECKED_ABOVE) {
        // Refused on its first bytes: the rest was never read into memory.
        assertThat(threads.getCurrentThreadAllocatedBytes() - before).isLessThan(size / 4);
      }
    }
  }

  @Test
  void readsANewer2xWithAWarning() throws Exception {
    Map<String, Object> tree = synthetic();
    tree.put("version", "2.14");
    FlightRecorderDump dump = readPickle(tree);
    assertThat(dump.version()).isEqualTo("2.14");
    assertThat(dump.records()).hasSize(5);
    assertThat(dump.warnings()).containsExactly(
        "dump format version 2.14 is newer than 2.10, the newest this reader knows; read as 2.10");
  }

  @Test
  void refusesVersionsOutsideTwoPointTwoToTwoPointX() {
    for (String version : List.of("3.0", "2.1", "1.4")) {
      Map<String, Object> tree = synthetic();
      tree.put("version", version);
      assertThatThrownBy(() -> readPickle(tree)).isInstanceOf(DumpFormatException.class).hasMessage(
          "unsupported Flight Recorder dump version '" + version + "': this reader supports 2.2 to 2.10 ("
              + FILE + ")");
    }
    Map<String, Object> tree = synthetic();
    tree.put("version", "two");
    assertThatThrownBy(() -> readPickle(tree)).hasMessage(
        "unsupported Flight Recorder dump version 'two': expected major.minor such as '2.9' (" + FILE + ")");
  }

  @Test
  void acceptsNcclVersionAndCommLibVersion() throws Exception {
    Map<String, Object> tree = synthetic();
    tree.remove("nccl_version");
    tree.put("comm_lib_version", "2.28.9");
    assertThat(readPickle(tree).commLibVersion()).isEqualTo("2.28.9");
    tree.remove("comm_lib_version");
    assertThat(readPickle(tree).commLibVersion()).isEmpty();
  }

  @Test
  void mapsTheOlderSeqIdToCollectiveSeq() throws Exception {
    Map<String, Object> tree = synthetic();
    for (Object e : entries(tree)) {
      @SuppressWarnings("unchecked")
      Map<Object, Object> entry = (Map<Object, Object>) e;
      entry.put("seq_id", entry.remove("collective_seq_id"));
    }
    FlightRecorderDump dump = readPickle(tree);
    assertThat(dump.records()).extracting(CollectiveRecord::getCollectiveSeq).containsExactly(41L, 7L, 29L, 29L, 42L);
    assertThat(dump.warnings()).isEmpty();
  }

  @Test
  void anEmptyEntriesListIsADumpWithNoRecords() throws Exception {
    Map<String, Object> tree = synthetic();
    tree.put("entries", new ArrayList<>());
    FlightRecorderDump dump = readPickle(tree);
    assertThat(dump.records()).isEmpty();
    assertThat(dump.warnings()).isEmpty();
    // Groups and progress are still known: pg_id ↔ name by creation order, as in the wedged real ranks.
    assertThat(dump.progress()).extracting(ProcessGroupProgress::getProcessGroup).containsExactly("0", "1", "6");
    assertThat(dump.processGroups()).extracting(ProcessGroup::getLocalId).containsExactly("0", "2", "12");
  }

  @Test
  void aPickleWithoutEntriesWasDumpedWithoutCollectives() throws Exception {
    Map<String, Object> tree = synthetic();
    tree.remove("entries");
    FlightRecorderDump dump = readPickle(tree);
    assertThat(dump.records()).isEmpty();
    assertThat(dump.warnings()).containsExactly("no 'entries' key: the dump was taken without collectives");
    // The JSON variant leaves 'entries' out whenever it is empty: nothing to warn about.
    assertThat(reader.parse(JsonDumps.MAPPER.writeValueAsBytes(tree), FILE, 3).warnings()).isEmpty();
  }

  @Test
  void namesWhatMakesAFileNotADump() throws Exception {
    Map<String, Object> tree = new LinkedHashMap<>();
    tree.put("version", "2.9");
    assertThatThrownBy(() -> readPickle(tree)).isInstanceOf(DumpFormatException.class)
        .hasMessage("not a Flight Recorder dump: missing key 'entries' and 'pg_config' (" + FILE + ")");
    Map<String, Object> noVersion = synthetic();
    noVersion.remove("version");
    assertThatThrownBy(() -> readPickle(noVersion))
        .hasMessage("not a Flight Recorder dump: missing key 'version' (" + FILE + ")");
    assertThatThrownBy(() -> reader.parse(Pickles.encode(List.of(1, 2)), FILE, 3))
        .hasMessage("not a Flight Recorder dump: the top level is a list, expected a dict (" + FILE + ")");
    assertThatThrownBy(() -> reader.parse("PK\3\4".getBytes(StandardCharsets.ISO_8859_1), FILE, 3))
        .hasMessage("not a Flight Recorder dump: it starts with byte 0x50, neither a pickle (0x80) nor a JSON"
            + " object ('{') (" + FILE + ")");
    assertThatThrownBy(() -> reader.parse(new byte[0], FILE, 3))
        .hasMessage("not a Flight Recorder dump: the file is empty (" + FILE + ")");
  }

  @Test
  void namesTheEntryAndKeyOfAWrongType() {
    Map<String, Object> tree = synthetic();
    tree.put("entries", "oops");
    assertThatThrownBy(() -> readPickle(tree)).isInstanceOf(DumpFormatException.class)
        .hasMessage("'entries' is a string, expected a list (" + FILE + ")");
    Map<String, Object> badField = synthetic();
    entry(badField, 1).put("timeout_ms", "600000");
    assertThatThrownBy(() -> readPickle(badField))
        .hasMessage("entries[1] (record_id 8589934610)['timeout_ms'] is a string, expected an int (" + FILE + ")");
    Map<String, Object> badPg = synthetic();
    entry(badPg, 0).put("process_group", "0");
    assertThatThrownBy(() -> readPickle(badPg)).hasMessage(
        "entries[0] (record_id 8589934609): 'process_group' is a string, expected a (name, desc) pair (" + FILE
            + ")");
    Map<String, Object> badRanks = synthetic();
    group(badRanks, "1").put("ranks", "[0, 1, two]");
    assertThatThrownBy(() -> readPickle(badRanks)).hasMessage(
        "pg_config['1']: 'ranks' is '[0, 1, two]', expected a list of global ranks such as '[0, 1, 2]' (" + FILE
            + ")");
    Map<String, Object> duplicate = synthetic();
    group(duplicate, "1").put("ranks", "[0, 1, 1, 3]");
    assertThatThrownBy(() -> readPickle(duplicate))
        .hasMessage("pg_config['1']: global rank 1 appears twice in the group (" + FILE + ")");
  }

  @Test
  void acceptsRanksWrittenWithoutSpaces() throws Exception {
    Map<String, Object> tree = synthetic();
    group(tree, "1").put("ranks", "[0,1,2,3]");
    assertThat(readPickle(tree).processGroup("1").getRanksList()).containsExactly(0, 1, 2, 3);
  }

  @Test
  void warnsAboutWhatItReadsPast() throws Exception {
    Map<String, Object> tree = synthetic();
    entry(tree, 0).put("stack_id", 4);
    entry(tree, 1).put("state", "queued");
    tree.put("nccl_comm_state", new LinkedHashMap<>());
    tree.put("debug_info", "x");
    FlightRecorderDump dump = readPickle(tree);
    assertThat(dump.records().get(1).getState()).isEqualTo(CollectiveState.COLLECTIVE_STATE_UNSPECIFIED);
    assertThat(dump.warnings()).containsExactly(
        "unknown top-level key 'debug_info' ignored",
        "entries: unknown key 'stack_id' ignored",
        "entries: unknown state 'queued' read as unspecified");
  }

  @Test
  void warnsWhenTheFileNameGivesARankThatIsNotAMember() throws Exception {
    FlightRecorderDump dump = reader.parse(Pickles.encode(synthetic()), Path.of("_dump_9"), 9);
    assertThat(dump.warnings()).contains("rank 9 is not a member of process groups '0', '1', '6' that its dump"
        + " lists: is the file name right?");
  }

  @Test
  void leavesOutProgressItCannotMatchToAGroup() throws Exception {
    Map<String, Object> tree = synthetic();
    tree.put("entries", new ArrayList<>());
    @SuppressWarnings("unchecked")
    Map<Object, Object> status = (Map<Object, Object>) tree.get("pg_status");
    status.put("99", status.get("0"));
    FlightRecorderDump dump = readPickle(tree);
    assertThat(dump.progress()).isEmpty();
    assertThat(dump.warnings()).containsExactly("pg_status lists pg_ids [0, 2, 12, 99] that no entry names and"
        + " pg_config order cannot match to a group: their progress is left out");
  }

  @Test
  void matchesNonNumericGroupNamesByFileOrderWithAWarning() throws Exception {
    Map<String, Object> tree = synthetic();
    tree.put("entries", new ArrayList<>());
    @SuppressWarnings("unchecked")
    Map<Object, Object> config = (Map<Object, Object>) tree.get("pg_config");
    Map<Object, Object> renamed = new LinkedHashMap<>();
    for (String name : List.of("0", "1", "6")) {
      @SuppressWarnings("unchecked")
      Map<Object, Object> g = (Map<Object, Object>) config.get(name);
      g.put("name", "group_" + name);
      renamed.put("group_" + name, g);
    }
    tree.put("pg_config", renamed);
    FlightRecorderDump dump = readPickle(tree);
    assertThat(dump.progress()).extracting(ProcessGroupProgress::getProcessGroup)
        .containsExactly("group_0", "group_1", "group_6");
    assertThat(dump.warnings()).containsExactly("pg_status ids were matched to process groups by pg_config"
        + " order, since the group names are not numbers: the match is a guess");
  }

  @Test
  void readsPgStatusValuesAsStringsOnlyInTheJsonVariant() throws Exception {
    Map<String, Object> tree = synthetic();
    @SuppressWarnings("unchecked")
    Map<Object, Object> status = (Map<Object, Object>) ((Map<?, ?>) tree.get("pg_status")).get("0");
    status.put("last_completed_collective", "41");
    assertThat(reader.parse(JsonDumps.MAPPER.writeValueAsBytes(tree), FILE, 3).progress().get(0)
        .getLastCompletedSeq()).isEqualTo(41);
    assertThatThrownBy(() -> readPickle(tree)).hasMessage(
        "pg_status['0']['last_completed_collective'] is a string, expected an int (" + FILE + ")");
  }

  @Test
  void refusesOpcodesThatImportOrCall() {
    byte[] global = {(byte) 0x80, 2, 'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'};
    assertThatThrownBy(() -> reader.parse(global, FILE, 3)).isInstanceOf(DumpFormatException.class)
        .hasMessage("pickle opcode GLOBAL at byte 2 is not allowed in a Flight Recorder dump (" + FILE + ")");
    byte[] pickle = Pickles.encode(synthetic());
    int at = 200;
    while (pickle[at] != PickleOpcodes.BINUNICODE) {
      at++;
    }
    byte[] reduce = pickle.clone();
    reduce[at] = PickleOpcodes.REDUCE;
    assertThatThrownBy(() -> reader.parse(reduce, FILE, 3))
        .hasMessage("pickle opcode REDUCE at byte " + at + " is not allowed in a Flight Recorder dump (" + FILE
            + ")");
  }

  @Test
  void refusesHugeDeclaredLengthsWithoutAllocating() {
    byte[] pickle = {(byte) 0x80, 2, 'X', (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f, 'a', 'b', 'c', 'd', '.'};
    assertThatThrownBy(() -> reader.parse(pickle, FILE, 3)).isInstanceOf(DumpFormatException.class)
        .hasMessage("truncated pickle at byte 2 of 12: BINUNICODE declares a string of 2147483647 bytes but 5"
            + " remain (" + FILE + ")");
  }

  @Test
  void refusesSelfReferencingContainers() {
    // EMPTY_LIST BINPUT 0 MARK BINGET 0 APPENDS STOP: a list that contains itself.
    byte[] cycle = {(byte) 0x80, 2, ']', 'q', 0, '(', 'h', 0, 'e', '.'};
    assertThatThrownBy(() -> reader.parse(cycle, FILE, 3)).hasMessage("pickle opcode APPENDS at byte 8: it"
        + " changes a list that was already fetched from the memo (self-referencing data) (" + FILE + ")");
  }

  @Test
  void refusesDumpsThatExpandFarBeyondTheirSize() throws Exception {
    // One entry with 3,000 dims, referenced 20,000 times through the memo: 60 million values from ~50 KB.
    Map<String, Object> tree = synthetic();
    Map<Object, Object> entry = entry(tree, 0);
    List<Object> dims = new ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      dims.add(1);
    }
    entry.put("input_sizes", List.of(dims));
    tree.remove("entries");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] base = Pickles.encode(tree);
    out.write(base, 0, base.length - 2); // up to, not including, the final SETITEMS and STOP
    byte[] one = Pickles.encode(entry);
    out.write(new byte[] {'X', 7, 0, 0, 0});
    out.writeBytes("entries".getBytes(StandardCharsets.US_ASCII));
    out.write(new byte[] {']', '('});
    out.write(one, 2, one.length - 3); // the entry dict, without PROTO and STOP
    out.write(new byte[] {'q', (byte) 250});
    for (int i = 0; i < 20_000; i++) {
      out.write(new byte[] {'h', (byte) 250});
    }
    out.write(new byte[] {'e', 'u', '.'});
    byte[] bomb = out.toByteArray();
    assertThatThrownBy(() -> reader.parse(bomb, FILE, 3)).isInstanceOf(DumpFormatException.class)
        .hasMessage("the dump expands to more values than its size allows: it refers to the same containers over"
            + " and over, which PyTorch never does (" + FILE + ")");
  }

  @Test
  void refusesIntegersBeyondSixtyFourBits() {
    // time_created_ns of the first entry, LONG1 with 8 bytes, becomes a 9-byte LONG1 (2^64 + itself).
    byte[] pickle = Pickles.encode(synthetic());
    byte[] t0 = new byte[10];
    t0[0] = (byte) PickleOpcodes.LONG1;
    t0[1] = 8;
    for (int i = 0; i < 8; i++) {
      t0[2 + i] = (byte) (SyntheticDumps.T0 >>> (8 * i));
    }
    int at = indexOf(pickle, t0);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(pickle, 0, at + 1);
    out.write(9);
    out.write(pickle, at + 2, 8);
    out.write(1);
    out.write(pickle, at + 10, pickle.length - at - 10);
    assertThatThrownBy(() -> reader.parse(out.toByteArray(), FILE, 3)).isInstanceOf(DumpFormatException.class)
        .hasMessage("entries[0] (record_id 8589934609)['time_created_ns'] is "
            + BigInteger.ONE.shiftLeft(64).add(BigInteger.valueOf(SyntheticDumps.T0))
            + ", out of the 64-bit range (" + FILE + ")");
  }

  @Test
  void namesWhereTheJsonVariantBreaks() throws Exception {
    byte[] json = DumpWriter.toJson(SyntheticDumps.rank(3, "2.9", false));
    assertThatThrownBy(() -> reader.parse(Arrays.copyOf(json, 100), FILE, 3)).isInstanceOf(DumpFormatException.class)
        .hasMessageStartingWith("truncated JSON at byte 100 of 100: ").hasMessageEndingWith(" (" + FILE + ")");
    byte[] broken = "{\"version\": \"2.9\", \"pg_config\": {}, \"version\": \"2.10\"}"
        .getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> reader.parse(broken, FILE, 3)).hasMessage("invalid JSON at byte 45 of 54 (line 1,"
        + " column 46): Duplicate field 'version' (" + FILE + ")");
  }

  @Test
  void ignoresBytesAfterStopWithAWarning() throws Exception {
    byte[] pickle = Pickles.encode(synthetic());
    byte[] padded = Arrays.copyOf(pickle, pickle.length + 3);
    assertThat(reader.parse(padded, FILE, 3).warnings())
        .containsExactly("3 bytes after the pickle's STOP opcode ignored");
  }

  @Test
  void readsPicklesWrittenByPythonToo() throws Exception {
    // The same dump re-pickled by CPython: containers memoized when created, APPEND, and for protocol 4
    // FRAME, SHORT_BINUNICODE and MEMOIZE.
    FlightRecorderDump original = reader.read(RealDumpsTest.sample("nvrx_gpu_error_1st").resolve("_dump_12"));
    for (String name : List.of("protocol2_rank_12", "protocol4_rank_12")) {
      Path python = Path.of(DumpReaderTest.class.getResource("/python_pickles/" + name).toURI());
      assertThat(reader.read(python)).isEqualTo(original.withFile(python));
    }
  }

  // ---- helpers ----

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    throw new AssertionError("not found");
  }

  private FlightRecorderDump readPickle(Map<String, Object> tree) throws DumpFormatException {
    return reader.parse(Pickles.encode(tree), FILE, 3);
  }

  /** The value tree of synthetic rank 3 (groups '0', '1' and '6'), mutable. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> synthetic() {
    return (Map<String, Object>) Pickles.decode(DumpWriter.toPickle(SyntheticDumps.rank(3, "2.9", false)));
  }

  private static List<?> entries(Map<String, Object> tree) {
    return (List<?>) tree.get("entries");
  }

  @SuppressWarnings("unchecked")
  private static Map<Object, Object> entry(Map<String, Object> tree, int i) {
    return (Map<Object, Object>) entries(tree).get(i);
  }

  @SuppressWarnings("unchecked")
  private static Map<Object, Object> group(Map<String, Object> tree, String name) {
    return (Map<Object, Object>) ((Map<?, ?>) tree.get("pg_config")).get(name);
  }
}
