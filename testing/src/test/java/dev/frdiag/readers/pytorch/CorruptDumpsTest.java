package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.testing.dumps.DumpWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Thousands of damaged dumps, made in memory: truncated at every byte, bit-flipped, with values of the wrong
 * type, with absurd declared lengths and with opcodes that would import or call something. Every one must come
 * back as a {@link DumpFormatException} naming the file (a bit flip may also leave a readable dump), never as any
 * other exception, a hang or an out-of-memory error.
 */
@Timeout(value = 20, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class CorruptDumpsTest {
  private static final Path FILE = Path.of("corrupt", "_dump_14");
  private static final Object ABSENT = new Object();

  private static byte[] realPickle;
  private static byte[] syntheticPickle;
  private static byte[] realJson;
  private static byte[] smallJson;

  private final DumpReader reader = DumpReader.create();
  private final List<String> problems = new ArrayList<>();
  private int cases;
  private int readAnyway;

  @BeforeAll
  static void loadDumps() throws Exception {
    Path file = RealDumpsTest.sample("nvrx_gpu_error_1st").resolve("_dump_14");
    realPickle = Files.readAllBytes(file);
    syntheticPickle = DumpWriter.toPickle(SyntheticDumps.rank(0, "2.9", true));
    realJson = DumpWriter.toJson(DumpReader.create().read(file));
    smallJson = DumpWriter.toJson(DumpReader.create().read(file.resolveSibling("_dump_4")));
  }

  @Test
  void aPickleTruncatedAtAnyByteIsReportedAsTruncated() {
    for (int length = 1; length < realPickle.length; length++) {
      mustFail("real pickle cut at " + length, Arrays.copyOf(realPickle, length), "truncated pickle at byte ");
    }
    // The synthetic one is three times longer: every fifth cut is enough for its frames, floats, long memo ids.
    for (int length = 1; length < syntheticPickle.length; length += 5) {
      mustFail("synthetic pickle cut at " + length, Arrays.copyOf(syntheticPickle, length),
          "truncated pickle at byte ");
    }
    mustFail("nothing", new byte[0], "not a Flight Recorder dump: the file is empty");
    assertThat(problems).isEmpty();
    assertThat(cases).isGreaterThan(realPickle.length + syntheticPickle.length / 5 - 3);
  }

  @Test
  void theJsonVariantTruncatedAnywhereIsReported() {
    for (int length = 1; length < smallJson.length; length += 2) {
      mustFail("JSON cut at " + length, Arrays.copyOf(smallJson, length), "truncated JSON at byte ");
    }
    assertThat(problems).isEmpty();
    assertThat(cases).isEqualTo(smallJson.length / 2);
  }

  @Test
  void bitFlipsGiveADumpOrADumpFormatExceptionAndNothingElse() {
    Random random = new Random(20260321);
    for (byte[] original : List.of(realPickle, syntheticPickle, realJson)) {
      for (int i = 0; i < 700; i++) {
        byte[] flipped = original.clone();
        int flips = 1 + random.nextInt(3);
        StringBuilder label = new StringBuilder("bit flips at");
        for (int f = 0; f < flips; f++) {
          int at = random.nextInt(flipped.length);
          int bit = random.nextInt(8);
          flipped[at] ^= (byte) (1 << bit);
          label.append(' ').append(at).append('.').append(bit);
        }
        mayFail(label.toString(), flipped);
      }
    }
    assertThat(problems).isEmpty();
    assertThat(cases).isEqualTo(2100);
    // Most flips land in numbers and strings and still read; the rest must be caught, not crash.
    assertThat(readAnyway).isBetween(1, cases - 1);
  }

  @Test
  void valuesOfTheWrongTypeAreReportedWithWhereTheyAre() throws Exception {
    List<Mutation> mutations = new ArrayList<>();
    for (Object v : List.of(7, List.of(), Map.of(), none())) {
      mutations.add(new Mutation(List.of("version"), v));
    }
    for (Object v : List.of("x", 7, List.of(), none())) {
      mutations.add(new Mutation(List.of("pg_config"), v));
      mutations.add(new Mutation(List.of("entries", 0), v));
    }
    for (Object v : List.of("x", 7, Map.of(), none())) {
      mutations.add(new Mutation(List.of("entries"), v));
    }
    for (Object v : List.of("x", 7, List.of())) {
      mutations.add(new Mutation(List.of("pg_status"), v));
      mutations.add(new Mutation(List.of("pg_config", "49"), v));
      mutations.add(new Mutation(List.of("pg_status", "6"), v));
    }
    mutations.add(new Mutation(List.of("nccl_version"), 7));
    mutations.add(new Mutation(List.of("pg_config", "49", "name"), 7));
    mutations.add(new Mutation(List.of("pg_config", "49", "desc"), List.of()));
    for (Object v : List.of(7, "[2, 6", "2, 6, 10, 14", "[a]", "[-1, 6]", "[99999999999]", "[2, 2]", Map.of(),
        ABSENT)) {
      mutations.add(new Mutation(List.of("pg_config", "49", "ranks"), v));
    }
    for (Object v : List.of(List.of(), 1.5, none())) {
      mutations.add(new Mutation(List.of("pg_status", "6", "last_enqueued_collective"), v));
    }
    Map<String, List<Object>> entryValues = new LinkedHashMap<>();
    entryValues.put("record_id", List.of("7", 1.5, List.of(), none(), -1, ABSENT));
    entryValues.put("pg_id", List.of("7", List.of()));
    entryValues.put("process_group", List.of("42", List.of("42"), new Object[] {1, 2}, ABSENT));
    entryValues.put("thread_name", List.of(7, List.of()));
    entryValues.put("thread_id", List.of(7));
    entryValues.put("collective_seq_id", List.of("7", none(), ABSENT));
    entryValues.put("p2p_seq_id", List.of("7"));
    entryValues.put("op_id", List.of("7"));
    entryValues.put("profiling_name", List.of(7, none(), ABSENT));
    entryValues.put("time_created_ns", List.of("7", none(), 1.5, ABSENT));
    entryValues.put("input_sizes", List.of("x", List.of(1, 2), List.of(List.of("a"))));
    entryValues.put("input_dtypes", List.of("x", List.of(1)));
    entryValues.put("output_sizes", List.of(7));
    entryValues.put("output_dtypes", List.of(Map.of()));
    entryValues.put("state", List.of(7, none(), ABSENT));
    entryValues.put("time_discovered_started_ns", List.of("x", -5, 1.5));
    entryValues.put("time_discovered_completed_ns", List.of(List.of()));
    entryValues.put("retired", List.of("False", 0));
    entryValues.put("timeout_ms", List.of("7", 1.5));
    entryValues.put("is_p2p", List.of("x", 1));
    entryValues.forEach((key, values) -> values.forEach(v -> mutations.add(new Mutation(List.of("entries", 3,
        key), v))));

    for (Mutation m : mutations) {
      Map<String, Object> tree = realTree();
      m.apply(tree);
      mustFail("pickle with " + m, Pickles.encode(tree), null);
      if (!(m.path().get(0).equals("pg_status") && m.path().size() == 3)) {
        // (The JSON variant writes pg_status values as strings, so those are legal there.)
        mustFail("JSON with " + m, JsonDumps.MAPPER.writeValueAsBytes(tree), null);
      }
    }
    assertThat(problems).isEmpty();
    assertThat(cases).isGreaterThan(150);
  }

  @Test
  void hugeDeclaredLengthsAreRefusedWithoutAllocatingThem() {
    byte[][] crafted = {
        bytes(0x80, 2, 'X', 0xff, 0xff, 0xff, 0x7f, 'a', '.'),
        bytes(0x80, 2, 'X', 0xff, 0xff, 0xff, 0xff, 'a', '.'),
        bytes(0x80, 2, 'X', 0x00, 0x00, 0x00, 0x80, 'a', '.'),
        bytes(0x80, 2, 0x8d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 'a', '.'),
        bytes(0x80, 2, 0x8d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'a', '.'),
        bytes(0x80, 2, 0x8b, 0xff, 0xff, 0xff, 0x7f, 1, '.'),
        bytes(0x80, 2, 0x8b, 0xff, 0xff, 0xff, 0xff, 1, '.'),
        bytes(0x80, 2, 0x8a, 0xff, 1, 2, '.'),
        bytes(0x80, 2, 'N', 'r', 0xff, 0xff, 0xff, 0xff, '.'),
        bytes(0x80, 2, 'j', 0xff, 0xff, 0xff, 0xff, '.'),
        bytes(0x80, 2, 'h', 3, '.'),
        bytes(0x80, 2, 0x95, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
        bytes(0x80, 9, '}', '.'),
    };
    for (byte[] b : crafted) {
      mustFail("crafted " + hex(b), b, null);
    }
    // Every string of a dump, in turn, claims to be 2 GiB long.
    for (byte[] pickle : List.of(realPickle, syntheticPickle)) {
      for (int at : Pickles.opcodeOffsets(pickle)) {
        if (pickle[at] == PickleOpcodes.BINUNICODE) {
          byte[] b = pickle.clone();
          b[at + 1] = (byte) 0xff;
          b[at + 2] = (byte) 0xff;
          b[at + 3] = (byte) 0xff;
          b[at + 4] = (byte) 0x7f;
          mustFail("string at " + at + " of 2^31-1 bytes", b, "truncated pickle at byte " + at + " of "
              + pickle.length + ": BINUNICODE declares a string of 2147483647 bytes");
        }
      }
    }
    assertThat(problems).isEmpty();
    assertThat(cases).isGreaterThan(200);
  }

  @Test
  void opcodesThatImportOrCallAreRefusedWhereverTheyAppear() {
    int[] forbidden = {PickleOpcodes.GLOBAL, PickleOpcodes.STACK_GLOBAL, PickleOpcodes.REDUCE, PickleOpcodes.BUILD,
        PickleOpcodes.INST, PickleOpcodes.OBJ, PickleOpcodes.NEWOBJ, PickleOpcodes.NEWOBJ_EX, PickleOpcodes.EXT1,
        PickleOpcodes.EXT2, PickleOpcodes.EXT4, PickleOpcodes.PERSID, PickleOpcodes.BINPERSID};
    List<Integer> offsets = Pickles.opcodeOffsets(realPickle);
    for (int op : forbidden) {
      String name = PickleOpcodes.opName(op);
      mustFail(name + " first", bytes(0x80, 2, op, 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'),
          "pickle opcode " + name + " at byte 2 is not allowed in a Flight Recorder dump");
      for (int i = 1; i < offsets.size(); i += 20) {
        int at = offsets.get(i);
        byte[] b = realPickle.clone();
        b[at] = (byte) op;
        mustFail(name + " at " + at, b, "pickle opcode " + name + " at byte " + at
            + " is not allowed in a Flight Recorder dump");
      }
    }
    assertThat(problems).isEmpty();
    assertThat(cases).isGreaterThan(13 * 20);
  }

  @Test
  void brokenStructureIsCaughtBeforeAnythingIsBuilt() {
    List<Integer> offsets = Pickles.opcodeOffsets(realPickle);
    int[] swaps = {PickleOpcodes.SETITEMS, PickleOpcodes.APPENDS, PickleOpcodes.MARK, PickleOpcodes.STOP,
        PickleOpcodes.TUPLE2, PickleOpcodes.EMPTY_DICT, PickleOpcodes.EMPTY_LIST, 0xff, 0x00, 'I'};
    for (int i = 1; i < offsets.size(); i += 10) {
      int at = offsets.get(i);
      for (int op : swaps) {
        if ((realPickle[at] & 0xff) == op) {
          continue;
        }
        byte[] b = realPickle.clone();
        b[at] = (byte) op;
        mayFail(PickleOpcodes.opName(op) + " at " + at, b);
      }
      byte[] deleted = new byte[realPickle.length - 1];
      System.arraycopy(realPickle, 0, deleted, 0, at);
      System.arraycopy(realPickle, at + 1, deleted, at, realPickle.length - at - 1);
      mayFail("opcode at " + at + " deleted", deleted);
    }
    assertThat(problems).isEmpty();
    assertThat(cases).isGreaterThan(3000);
  }

  // ---- checks ----

  private void mustFail(String label, byte[] content, String expectedStart) {
    cases++;
    try {
      reader.parse(content, FILE, 14);
      problems.add(label + ": read without an error");
    } catch (DumpFormatException e) {
      checkMessage(label, e, expectedStart);
    } catch (RuntimeException | Error e) {
      problems.add(label + ": threw " + e);
    }
  }

  private void mayFail(String label, byte[] content) {
    cases++;
    try {
      reader.parse(content, FILE, 14);
      readAnyway++;
    } catch (DumpFormatException e) {
      checkMessage(label, e, null);
    } catch (RuntimeException | Error e) {
      problems.add(label + ": threw " + e);
    }
  }

  private void checkMessage(String label, DumpFormatException e, String expectedStart) {
    String message = e.getMessage();
    if (!e.file().equals(FILE) || !message.endsWith(" (" + FILE + ")")) {
      problems.add(label + ": message does not name the file: " + message);
    } else if (message.startsWith("internal error")) {
      problems.add(label + ": " + message);
    } else if (expectedStart != null && !message.startsWith(expectedStart)) {
      problems.add(label + ": expected a message starting with '" + expectedStart + "' but got: " + message);
    }
  }

  // ---- building damaged dumps ----

  /** A value change (or, with {@link #ABSENT}, a removal) at a path of keys and list indices. */
  private record Mutation(List<Object> path, Object value) {
    @SuppressWarnings("unchecked")
    void apply(Map<String, Object> tree) {
      Object node = tree;
      for (int i = 0; i < path.size() - 1; i++) {
        Object step = path.get(i);
        node = step instanceof Integer index ? ((List<Object>) node).get(index) : ((Map<Object, Object>) node)
            .get(step);
      }
      Object last = path.get(path.size() - 1);
      if (node instanceof List<?> list) {
        ((List<Object>) list).set((Integer) last, value == NONE ? null : value);
      } else if (value == ABSENT) {
        ((Map<Object, Object>) node).remove(last);
      } else {
        ((Map<Object, Object>) node).put(last, value == NONE ? null : value);
      }
    }

    @Override
    public String toString() {
      String v = value == ABSENT ? "removed" : value == NONE ? "None" : value instanceof Object[] t
          ? Arrays.toString(t) : String.valueOf(value);
      return path + " = " + v;
    }
  }

  private static final Object NONE = new Object();

  /** Stands for None in mutation lists, which {@code List.of} cannot hold. */
  private static Object none() {
    return NONE;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> realTree() {
    return (Map<String, Object>) Pickles.decode(realPickle);
  }

  private static byte[] bytes(int... values) {
    byte[] b = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      b[i] = (byte) values[i];
    }
    return b;
  }

  private static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02x", x & 0xff));
    }
    return sb.toString();
  }

  @Test
  void aHugeFileThatOnlyStartsLikeAPickleFailsOnItsFirstBytesWithoutBeingReadWhole(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path dir) throws Exception {
    java.nio.file.Path huge = dir.resolve("_dump_0");
    try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(huge.toFile(), "rw")) {
      f.write(new byte[] {(byte) 0x80, 0x02, (byte) 0xff});
      // Sparse: a gigabyte on paper, nothing on disk.
      f.setLength(1_000_000_000L);
    }
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
    long before = threads.getCurrentThreadAllocatedBytes();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> reader.read(huge))
        .isInstanceOf(DumpFormatException.class).hasMessageContaining("_dump_0").hasMessageContaining("at byte 2");
    long allocated = threads.getCurrentThreadAllocatedBytes() - before;
    org.assertj.core.api.Assertions.assertThat(allocated).as("bytes allocated to find out").isLessThan(16L << 20);
  }
}
