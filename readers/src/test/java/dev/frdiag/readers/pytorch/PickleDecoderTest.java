package dev.frdiag.readers.pytorch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The values a pickle decodes to, against bytes Python's own pickler wrote. */
class PickleDecoderTest {
  /**
   * {@code pickle.dumps(v, protocol=2)} and {@code protocol=4} of CPython 3.11, where {@code shared = [1, 2]} and
   * {@code v = {'neg': -300, 'l5': 2**40, 'nl5': -(2**40) - 7, 'big': 2**70, 'minus_big': -(2**70), 'small': 5,
   * 'i2': 40000, 'f': -1.5, 't1': (1,), 't2': (1, 'a'), 't3': (1, 2, 3), 't4': (1, 2, 3, 4), 't0': (),
   * 's': 'é✓', 'b': [True, False, None], 'a': shared, 'c': shared}}.
   */
  private static final String PROTOCOL_2 = "80027d71002858030000006e656771014ad4feffff58020000006c3571028a06000000000001"
      + "58030000006e6c3571038a06f9fffffffffe580300000062696771048a0900000000000000004058090000006d696e75735f62696771058a"
      + "090000000000000000c05805000000736d616c6c71064b055802000000693271074d409c580100000066710847bff800000000000058020000"
      + "00743171094b0185710a58020000007432710b4b01580100000061710c86710d58020000007433710e4b014b024b0387710f58020000007434"
      + "7110284b014b024b034b047471115802000000743071122958010000007371135805000000c3a9e29c9371145801000000627115"
      + "5d71162888894e65680c5d7117284b014b026558010000006371186817752e";
  private static final String PROTOCOL_4 = "800495d2000000000000007d94288c036e6567944ad4feffff8c026c35948a06000000000001"
      + "8c036e6c35948a06f9fffffffffe8c03626967948a090000000000000000408c096d696e75735f626967948a090000000000000000c08c05"
      + "736d616c6c944b058c026932944d409c8c01669447bff80000000000008c027431944b0185948c027432944b018c01619486948c0274339"
      + "44b014b024b0387948c02743494284b014b024b034b0474948c02743094298c0173948c05c3a9e29c93948c0162945d942888894e65680c"
      + "5d94284b014b02658c0163946817752e";

  @ParameterizedTest
  @ValueSource(strings = {PROTOCOL_2, PROTOCOL_4})
  void decodesWhatPythonWrites(String hex) {
    byte[] pickle = HexFormat.of().parseHex(hex);
    PickleDecoder.Decoded d = PickleDecoder.decode(pickle, pickle.length);
    assertEquals(pickle.length, d.end());
    Map<?, ?> v = (Map<?, ?>) d.value();
    assertEquals(List.of("neg", "l5", "nl5", "big", "minus_big", "small", "i2", "f", "t1", "t2", "t3", "t4", "t0", "s",
        "b", "a", "c"), new ArrayList<>(v.keySet()), "keys in file order");
    assertEquals(-300, ((Number) v.get("neg")).longValue());
    assertEquals(1L << 40, v.get("l5"));
    assertEquals(-(1L << 40) - 7, v.get("nl5"));
    assertEquals(BigInteger.TWO.pow(70), v.get("big"));
    assertEquals(BigInteger.TWO.pow(70).negate(), v.get("minus_big"));
    assertEquals(5, ((Number) v.get("small")).longValue());
    assertEquals(40000, ((Number) v.get("i2")).longValue());
    assertEquals(-1.5, v.get("f"));
    assertArrayEquals(new Object[] {1}, (Object[]) v.get("t1"));
    assertArrayEquals(new Object[] {1, "a"}, (Object[]) v.get("t2"));
    assertArrayEquals(new Object[] {1, 2, 3}, (Object[]) v.get("t3"));
    assertArrayEquals(new Object[] {1, 2, 3, 4}, (Object[]) v.get("t4"));
    assertArrayEquals(new Object[0], (Object[]) v.get("t0"));
    assertEquals("é✓", v.get("s"));
    assertEquals(Arrays.asList(true, false, null), v.get("b"));
    assertEquals(List.of(1, 2), v.get("a"));
    assertSame(v.get("a"), v.get("c"), "a memo reference is the same value");
  }

  @Test
  void aDictKeySetTwiceKeepsItsPlaceAndTheLastValue() {
    PickleDict d = new PickleDict();
    for (int i = 0; i < 40; i++) {
      d.put("k" + i, i);
    }
    d.put("k3", "again");
    d.put("k39", "last");
    assertEquals(40, d.size());
    assertEquals("again", d.get("k3"));
    assertEquals("last", d.get("k39"));
    assertEquals("k3", new ArrayList<>(d.keySet()).get(3));
    assertTrue(d.containsKey("k0") && !d.containsKey("k40"));
  }

  @Test
  void listsWrittenWithTheSameBytesAreOneValue() {
    // {'a': [1, 2], 'b': [1, 2]} as PyTorch writes it: each list whole, MARK … APPENDS.
    Map<?, ?> v = decode("80027d28" + "8c0161" + "5d284b014b0265" + "8c0162" + "5d284b014b0265" + "752e");
    assertEquals(List.of(1, 2), v.get("a"));
    assertSame(v.get("a"), v.get("b"), "one list for every repetition of its bytes");
  }

  @Test
  void aMemoSlotStoredAgainChangesWhatTheSameBytesMean() {
    // {'a': [memo 0], 'b': [memo 0]}, memo 0 being 'a' and then, stored again, 'b'.
    Map<?, ?> v = decode("80027d28" + "8c01617100" + "5d28680065" + "8c01627100" + "5d28680065" + "752e");
    assertEquals(List.of("a"), v.get("a"));
    assertEquals(List.of("b"), v.get("b"));
  }

  @Test
  void aListFilledInSeveralBatchesHoldsThemAll() {
    // Python's pickler writes long lists in batches: [1] then 2 appended in a second MARK … APPENDS.
    byte[] pickle = HexFormat.of().parseHex("80025d284b0165284b02652e");
    assertEquals(List.of(1, 2), PickleDecoder.decode(pickle, pickle.length).value());
  }

  @Test
  void aRepeatedListReferringToNothingIsNamedWhereItDoes() {
    byte[] pickle = HexFormat.of().parseHex("80025d28680565" + "2e");
    DumpProblem p = assertThrows(DumpProblem.class, () -> PickleDecoder.decode(pickle, pickle.length));
    assertEquals("pickle opcode BINGET at byte 4: memo id 5 was never stored", p.getMessage());
  }

  private static Map<?, ?> decode(String hex) {
    byte[] pickle = HexFormat.of().parseHex(hex);
    return (Map<?, ?>) PickleDecoder.decode(pickle, pickle.length).value();
  }

  @Test
  void refusesAListThatWouldContainItself() {
    // PROTO 2, EMPTY_LIST, BINPUT 0, BINGET 0, APPEND, STOP: l = []; l.append(l)
    byte[] pickle = HexFormat.of().parseHex("80025d7100680061" + "2e");
    DumpProblem p = assertThrows(DumpProblem.class, () -> PickleDecoder.decode(pickle, pickle.length));
    assertTrue(p.getMessage().contains("self-referencing"), p.getMessage());
  }

  // A ring's entries as PyTorch writes them: the first stores its key strings and values in the memo, the ones after
  // refer to them. X = BINUNICODE, q = BINPUT, h = BINGET, K = BININT1, 0x86 = TUPLE2, u = SETITEMS.
  private static final String FIRST_ENTRY = "7d28" + str("record_id") + "7100" + "4b00" + str("state") + "7101"
      + str("scheduled") + "7102" + str("process_group") + "7103" + str("0") + "7104" + str("default_pg") + "7105"
      + "86" + "75";
  private static final String LATER_ENTRY = "7d28" + "6800" + "4b01" + "6801" + "6802" + "6803" + "6804" + "6805" + "86"
      + "75";

  @Test
  void entriesThatReferToTheMemoReadAsTheFirstOne() {
    List<?> entries = decodeList(FIRST_ENTRY + LATER_ENTRY);
    Map<?, ?> first = (Map<?, ?>) entries.get(0);
    Map<?, ?> later = (Map<?, ?>) entries.get(1);
    assertEquals(List.of("record_id", "state", "process_group"), new ArrayList<>(later.keySet()), "file order");
    assertEquals(1, later.get("record_id"));
    assertSame(first.get("state"), later.get("state"));
    assertArrayEquals(new Object[] {"0", "default_pg"}, (Object[]) later.get("process_group"));
    assertTrue(later instanceof EntryDict, "read straight from its bytes: " + later.getClass());
  }

  @Test
  void anEntryChangedAfterItsSetitemsHoldsTheChange() {
    // A second batch for the later entry: state set again, 'completed'.
    Map<?, ?> later = (Map<?, ?>) decodeList(FIRST_ENTRY + LATER_ENTRY + "28" + "6801" + str("completed") + "75")
        .get(1);
    assertEquals(List.of("record_id", "state", "process_group"), new ArrayList<>(later.keySet()));
    assertEquals("completed", later.get("state"));
  }

  @Test
  void anEntryNamingAKeyTwiceKeepsItsPlaceAndTheLastValue() {
    String twice = "7d28" + "6800" + "4b01" + "6801" + "6802" + "6800" + "4b07" + "75";
    Map<?, ?> later = (Map<?, ?>) decodeList(FIRST_ENTRY + twice).get(1);
    assertEquals(List.of("record_id", "state"), new ArrayList<>(later.keySet()));
    assertEquals(7, later.get("record_id"));
  }

  @Test
  void anEntryStoredInTheMemoIsOneValueWhereverItIsFetched() {
    List<?> entries = decodeList(FIRST_ENTRY + LATER_ENTRY + "7106" + "6806");
    assertSame(entries.get(1), entries.get(2));
    assertEquals(1, ((Map<?, ?>) entries.get(2)).get("record_id"));
  }

  /** The list of the dicts {@code items} writes: PROTO 2, EMPTY_LIST, MARK, items, APPENDS, STOP. */
  private static List<?> decodeList(String items) {
    byte[] pickle = HexFormat.of().parseHex("80025d28" + items + "652e");
    return (List<?>) PickleDecoder.decode(pickle, pickle.length).value();
  }

  /** BINUNICODE of an ASCII string. */
  private static String str(String text) {
    return String.format("58%02x000000", text.length()) + HexFormat.of().formatHex(text.getBytes());
  }
}
