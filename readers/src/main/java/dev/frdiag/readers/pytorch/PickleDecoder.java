package dev.frdiag.readers.pytorch;

import static dev.frdiag.readers.pytorch.PickleOpcodes.APPEND;
import static dev.frdiag.readers.pytorch.PickleOpcodes.APPENDS;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BINFLOAT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BINGET;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BININT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BININT1;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BININT2;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BINPUT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BINUNICODE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BINUNICODE8;
import static dev.frdiag.readers.pytorch.PickleOpcodes.DICT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.EMPTY_DICT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.EMPTY_LIST;
import static dev.frdiag.readers.pytorch.PickleOpcodes.EMPTY_TUPLE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.FRAME;
import static dev.frdiag.readers.pytorch.PickleOpcodes.HIGHEST_PROTOCOL;
import static dev.frdiag.readers.pytorch.PickleOpcodes.LIST;
import static dev.frdiag.readers.pytorch.PickleOpcodes.LONG1;
import static dev.frdiag.readers.pytorch.PickleOpcodes.LONG4;
import static dev.frdiag.readers.pytorch.PickleOpcodes.LONG_BINGET;
import static dev.frdiag.readers.pytorch.PickleOpcodes.LONG_BINPUT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.MARK;
import static dev.frdiag.readers.pytorch.PickleOpcodes.MEMOIZE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.NEWFALSE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.NEWTRUE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.NONE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.PROTO;
import static dev.frdiag.readers.pytorch.PickleOpcodes.SETITEM;
import static dev.frdiag.readers.pytorch.PickleOpcodes.SETITEMS;
import static dev.frdiag.readers.pytorch.PickleOpcodes.SHORT_BINUNICODE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.STOP;
import static dev.frdiag.readers.pytorch.PickleOpcodes.TUPLE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.TUPLE1;
import static dev.frdiag.readers.pytorch.PickleOpcodes.TUPLE2;
import static dev.frdiag.readers.pytorch.PickleOpcodes.TUPLE3;
import static dev.frdiag.readers.pytorch.PickleOpcodes.isAllowed;
import static dev.frdiag.readers.pytorch.PickleOpcodes.isForbidden;
import static dev.frdiag.readers.pytorch.PickleOpcodes.isKnown;
import static dev.frdiag.readers.pytorch.PickleOpcodes.opName;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;

/**
 * Decodes a pickle in one pass, checking every opcode before it acts on it: the stack is kept twice, once as the
 * kinds of its values and once as the values, so that a pickle can neither instantiate a class, allocate a buffer
 * bigger than the file, pop an empty stack, cast to the wrong container, nor build a cycle, and whatever is wrong
 * is named with its byte offset.
 *
 * <p>Values come out as {@link PickleDict} (dicts, in file order), {@code ArrayList} (lists; a list written the way
 * PyTorch writes the lists its entries repeat comes out as a {@link RepeatedLists.Shared}, one instance for every
 * repetition of its bytes), {@code Object[]}
 * (tuples), {@code String}, {@code Integer} (BININT*), {@code Long} or {@code BigInteger} (LONG1/LONG4),
 * {@code Double}, {@code Boolean} and null. Not thread-safe; use one per pickle.
 *
 * <p>What a Flight Recorder dump may contain is what {@code torch::jit::Pickler} writes for dicts, lists,
 * tuples, strings, ints, floats, bools and None (plus the few variants Python's own pickler uses for the same
 * values). Opcodes that import or call anything (GLOBAL, REDUCE, BUILD, …) are refused outright.
 *
 * <p>One class on purpose, for it is one state machine: the two stacks, the marks, the memo and the read position,
 * which every opcode reads and changes. Its per-opcode methods are kept within the client compiler's inlining limit
 * and the body of its opcode loop is a method of its own ({@code step}, compiled early; docs/PERFORMANCE.md,
 * 2026-11-27): moved to other classes, they would reach that state through calls or objects at every opcode. What
 * is not that state lives beside it: the opcodes' table ({@link PickleOpcodes}), entry dicts read straight from
 * their bytes ({@link EntryBytes}) and lists read whole from repeated bytes ({@link RepeatedLists}).
 */
final class PickleDecoder {
  // Value kinds on the simulated stack; containers that can change (list, dict) also carry an id.
  private static final int K_STR = 1;
  private static final int K_INT = 2;
  private static final int K_FLOAT = 3;
  private static final int K_BOOL = 4;
  private static final int K_NONE = 5;
  private static final int K_TUPLE = 6;
  private static final int K_LIST = 7;
  private static final int K_DICT = 8;
  // The containers, lists and dicts, are the highest kinds: memoValue tests for them with one comparison.
  private static final String[] KIND_NAMES = {"?", "a string", "an int", "a float", "a bool", "None", "a tuple",
      "a list", "a dict"};

  private final byte[] data;
  private final int end;
  private int pos;
  private int opStart;
  private int op;

  /** Stack of value kinds: {@code kind | containerId << 4}. */
  private long[] stack = new long[64];
  /** The values themselves, beside their kinds. */
  private Object[] values = new Object[64];
  private int top;
  /** Stack heights at each open MARK. */
  private int[] marks = new int[16];
  private int markCount;
  /** End of the values the last {@link #popMark} consumed. */
  private int consumedEnd;
  /** Memo slots by id; 0 = empty. */
  private long[] memo = new long[64];
  private Object[] memoValues = new Object[64];
  /** Distinct memo ids stored so far: what Python's MEMOIZE numbers the next one with. */
  private int memoSize;
  private int containers;
  /** Containers fetched from the memo: changing them afterwards could build a cycle. */
  private final BitSet shared = new BitSet();
  /** Lists read whole from a repeated run of bytes; see {@link RepeatedLists}. */
  private final RepeatedLists repeated = new RepeatedLists();
  /** Entry dicts read straight from their bytes; see {@link EntryBytes}. */
  private final EntryBytes entries = new EntryBytes(repeated, K_LIST);
  /** Containers taken from {@link #repeated}: shared with other entries, so never changed. */
  private final BitSet whole = new BitSet();
  /** The last dict built whose keys were all different, as it was built; see {@link #putPairs}. */
  private PickleDict distinctKeys;
  private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
      .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);

  /** A decoded pickle: its value, and where its STOP opcode ends (anything after it is not part of it). */
  record Decoded(Object value, int end) {}

  private PickleDecoder(byte[] data, int length) {
    this.data = data;
    this.end = length;
  }

  /**
   * Decodes {@code data[0, length)}.
   *
   * @throws DumpProblem describing the first problem, with its byte offset
   */
  static Decoded decode(byte[] data, int length) {
    PickleDecoder d = new PickleDecoder(data, length);
    int end = d.run();
    return new Decoded(d.values[0], end);
  }

  /**
   * Checks the first bytes of a file before the rest is read, so that a large file that is no dump fails at once:
   * only running out of bytes is accepted here.
   *
   * @throws DumpProblem describing the first problem within the prefix, with its byte offset
   */
  static void checkPrefix(byte[] prefix, int length) {
    try {
      decode(prefix, length);
    } catch (DumpProblem p) {
      if (!p.getMessage().startsWith(TRUNCATED)) {
        throw p;
      }
    }
  }

  private static final String TRUNCATED = "truncated pickle at byte ";

  private int run() {
    while (!step()) {
      // Each opcode is a call: step is compiled after the first few hundred opcodes of the first dump, while a loop
      // around the switch ran interpreted until it was replaced on the stack, a tenth of a second into the reading
      // at 64 ranks (docs/PERFORMANCE.md).
    }
    return pos;
  }

  /** Decodes one opcode; true once it was STOP. */
  private boolean step() {
    if (pos >= end) {
      throw new DumpProblem(TRUNCATED + end + " of " + end + ": it ends without a STOP opcode");
    }
    opStart = pos;
    op = data[pos++] & 0xff;
    if (top == stack.length) {
      // Room for the one value an opcode may push, made here so that push itself stays small.
      grow();
    }
    // Every case below is an allowed opcode (PickleOpcodes.isAllowed); anything else is refused by the default.
    switch (op) {
      case PROTO -> {
        int version = u8();
        if (version > HIGHEST_PROTOCOL) {
          throw problem("unsupported pickle protocol " + version);
        }
      }
      case FRAME -> {
        // A size hint for buffered reading; the frame's content is ordinary opcodes.
        need(8);
        pos += 8;
      }
      case STOP -> {
        if (markCount > 0) {
          throw problem("a MARK is still open");
        }
        if (top != 1) {
          throw problem(top == 0 ? "there is no value to return" : top + " values are left on the stack");
        }
        return true;
      }
      case MARK -> {
        if (markCount == marks.length) {
          marks = Arrays.copyOf(marks, markCount * 2);
        }
        marks[markCount++] = top;
      }
      case EMPTY_DICT -> {
        int dictEnd = entries.read(data, opStart, end, memo, memoValues);
        if (dictEnd >= 0) {
          pos = dictEnd;
          push(container(K_DICT), entries.dict());
        } else {
          push(container(K_DICT), new PickleDict());
        }
      }
      case EMPTY_LIST -> {
        RepeatedLists.Shared list = repeated.seen(data, opStart, end);
        if (list != null) {
          pos = opStart + repeated.foundLength();
        } else {
          int runEnd = repeated.runEnd(data, pos, end);
          if (runEnd >= 0) {
            list = repeated.find(data, opStart, runEnd, repeated.runHash());
            if (list == null) {
              list = repeated.add(data, opStart, runEnd, repeated.runHash(), wholeList(opStart));
            }
            repeated.seen(data, opStart, runEnd, end, list);
            pos = runEnd;
          }
        }
        if (list == null) {
          // Capacity 0, not the default 10: APPENDS then sizes it exactly, and most lists hold one to three items.
          push(container(K_LIST), new ArrayList<>(0));
        } else {
          long kind = container(K_LIST);
          whole.set((int) (kind >>> 4));
          push(kind, list);
        }
      }
      case EMPTY_TUPLE -> push(K_TUPLE, new Object[0]);
      case DICT -> {
        int from = popMark();
        checkPairs(from, consumedEnd);
        PickleDict dict = new PickleDict();
        putPairs(dict, from, consumedEnd);
        push(container(K_DICT), dict);
      }
      case LIST -> {
        int from = popMark();
        push(container(K_LIST), new ArrayList<>(Arrays.asList(values).subList(from, consumedEnd)));
      }
      case TUPLE -> {
        int from = popMark();
        push(K_TUPLE, Arrays.copyOfRange(values, from, consumedEnd));
      }
      case TUPLE1, TUPLE2, TUPLE3 -> {
        pop(op - TUPLE1 + 1);
        push(K_TUPLE, Arrays.copyOfRange(values, top, top + op - TUPLE1 + 1));
      }
      case APPEND -> {
        pop(1);
        modify(K_LIST);
        list(top - 1).add(values[top]);
      }
      case APPENDS -> {
        int from = popMark();
        modify(K_LIST);
        ArrayList<Object> list = list(top - 1);
        list.ensureCapacity(list.size() + consumedEnd - from);
        for (int i = from; i < consumedEnd; i++) {
          list.add(values[i]);
        }
      }
      case SETITEM -> {
        pop(2);
        checkPairs(top, top + 2);
        modify(K_DICT);
        ((PickleDict) values[top - 1]).put(values[top], values[top + 1]);
      }
      case SETITEMS -> {
        int from = popMark();
        checkPairs(from, consumedEnd);
        modify(K_DICT);
        putPairs((PickleDict) values[top - 1], from, consumedEnd);
      }
      case BINUNICODE -> string(u32());
      case SHORT_BINUNICODE -> string(u8());
      case BINUNICODE8 -> string(u64());
      case BININT -> push(K_INT, (int) s32());
      case BININT1 -> push(K_INT, u8());
      case BININT2 -> {
        need(2);
        pos += 2;
        push(K_INT, (data[pos - 2] & 0xff) | (data[pos - 1] & 0xff) << 8);
      }
      case LONG1 -> push(K_INT, longValue(u8(), "LONG1"));
      case LONG4 -> {
        long n = s32();
        if (n < 0) {
          throw problem("negative length " + n);
        }
        push(K_INT, longValue(n, "LONG4"));
      }
      case BINFLOAT -> {
        need(8);
        long bits = 0;
        for (int i = 0; i < 8; i++) {
          bits = bits << 8 | (data[pos + i] & 0xffL);
        }
        pos += 8;
        push(K_FLOAT, Double.longBitsToDouble(bits));
      }
      case NONE -> push(K_NONE, null);
      case NEWTRUE -> push(K_BOOL, Boolean.TRUE);
      case NEWFALSE -> push(K_BOOL, Boolean.FALSE);
      case BINPUT -> put(u8());
      case LONG_BINPUT -> put(u32());
      case MEMOIZE -> put(memoSize);
      case BINGET -> get(u8());
      case LONG_BINGET -> get(u32());
      default -> throw refused();
    }
    return false;
  }

  /** Why {@link #op}, which the decoder has no case for, is refused. */
  private RuntimeException refused() {
    if (isForbidden(op)) {
      return new DumpProblem("pickle opcode " + opName(op) + " at byte " + opStart
          + " is not allowed in a Flight Recorder dump");
    }
    if (!isAllowed(op)) {
      return new DumpProblem(isKnown(op)
          ? "pickle opcode " + opName(op) + " at byte " + opStart + " is not used by Flight Recorder dumps"
          : "invalid pickle opcode " + opName(op) + " at byte " + opStart);
    }
    return new IllegalStateException("opcode " + opName(op) + " is allowed but not handled");
  }

  private DumpProblem problem(String what) {
    return new DumpProblem("pickle opcode " + opName(op) + " at byte " + opStart + ": " + what);
  }

  // The small methods every opcode calls keep their failures in methods of their own: the client compiler inlines
  // only methods of up to 35 bytes of bytecode (C1MaxInlineSize), and building a message takes more than that.

  private void need(long n) {
    if (end - pos < n) {
      throw truncated(n);
    }
  }

  private DumpProblem truncated(long n) {
    return new DumpProblem(TRUNCATED + opStart + " of " + end + ": " + opName(op) + " needs "
        + n + " more bytes but " + (end - pos) + " remain");
  }

  /** A little-endian two's complement integer of {@code n} bytes, as LONG1 and LONG4 carry it. */
  private Number longValue(long n, String what) {
    if (end - pos < n) {
      throw new DumpProblem(TRUNCATED + opStart + " of " + end + ": " + what + " declares " + n
          + " bytes but " + (end - pos) + " remain");
    }
    int len = (int) n;
    int from = pos;
    pos += len;
    if (len == 0) {
      return 0L;
    }
    if (len <= 8) {
      long v = data[from + len - 1]; // sign-extended top byte
      for (int i = len - 2; i >= 0; i--) {
        v = v << 8 | (data[from + i] & 0xffL);
      }
      return v;
    }
    byte[] bigEndian = new byte[len];
    for (int i = 0; i < len; i++) {
      bigEndian[i] = data[from + len - 1 - i];
    }
    return new BigInteger(bigEndian);
  }

  private int u8() {
    need(1);
    return data[pos++] & 0xff;
  }

  private long u32() {
    need(4);
    long v = (data[pos] & 0xffL) | (data[pos + 1] & 0xffL) << 8 | (data[pos + 2] & 0xffL) << 16
        | (data[pos + 3] & 0xffL) << 24;
    pos += 4;
    return v;
  }

  private long s32() {
    return (int) u32();
  }

  private long u64() {
    need(8);
    long v = 0;
    for (int i = 7; i >= 0; i--) {
      v = v << 8 | (data[pos + i] & 0xffL);
    }
    pos += 8;
    return v;
  }

  private void string(long length) {
    // An unsigned 64-bit length that does not fit a long reads as negative here: past the end in any case.
    if (length < 0 || end - pos < length) {
      throw new DumpProblem(TRUNCATED + opStart + " of " + end + ": " + opName(op)
          + " declares a string of " + Long.toUnsignedString(length) + " bytes but " + (end - pos) + " remain");
    }
    push(K_STR, text((int) length));
  }

  /** The UTF-8 string of the {@code n} bytes at {@link #pos}, which it moves past them. */
  private String text(int n) {
    String text;
    if (isAscii(pos, n)) {
      // Latin-1 of ASCII bytes is the same text, and the JDK copies it without decoding.
      text = new String(data, pos, n, StandardCharsets.ISO_8859_1);
    } else {
      try {
        text = utf8.reset().decode(ByteBuffer.wrap(data, pos, n)).toString();
      } catch (CharacterCodingException e) {
        throw problem("the string is not valid UTF-8");
      }
    }
    pos += n;
    return text;
  }

  private boolean isAscii(int from, int n) {
    for (int i = from; i < from + n; i++) {
      if (data[i] < 0) {
        return false;
      }
    }
    return true;
  }

  private long container(int kind) {
    return kind | (long) containers++ << 4;
  }

  /** Pushes a value; {@link #run} made room for it, as no opcode pushes more than one. */
  private void push(long kind, Object value) {
    stack[top] = kind;
    values[top++] = value;
  }

  private void grow() {
    stack = Arrays.copyOf(stack, top * 2);
    values = Arrays.copyOf(values, top * 2);
  }

  @SuppressWarnings("unchecked")
  private ArrayList<Object> list(int at) {
    return (ArrayList<Object>) values[at];
  }

  private void putPairs(PickleDict dict, int from, int to) {
    int pairs = (to - from) / 2;
    if (dict.size() == 0 && sameKeys(from, pairs)) {
      // The keys of the last such dict, none twice: every entry of a ring lists the same memo-shared key strings.
      dict.setAll(distinctKeys, values, from, pairs);
      return;
    }
    dict.reserve(pairs);
    for (int i = from; i < to; i += 2) {
      dict.put(values[i], values[i + 1]);
    }
    if (dict.size() == pairs && pairs > 1) {
      // No key repeated: the next dict with these very keys (the same objects, in this order) needs no lookups.
      distinctKeys = dict;
    }
  }

  /** Whether the keys in {@code values[from, from + 2 * pairs)} are those of {@link #distinctKeys}, by identity. */
  private boolean sameKeys(int from, int pairs) {
    if (distinctKeys == null || pairs != distinctKeys.size()) {
      return false;
    }
    for (int i = 0; i < pairs; i++) {
      if (values[from + 2 * i] != distinctKeys.keyAt(i)) {
        return false;
      }
    }
    return true;
  }

  /** Height of the stack at the innermost open MARK, or 0. */
  private int frameBottom() {
    return markCount == 0 ? 0 : marks[markCount - 1];
  }

  private void pop(int n) {
    if (top - frameBottom() < n) {
      throw problem("it needs " + n + (n == 1 ? " value" : " values") + " but the stack "
          + (markCount > 0 ? "above the last MARK " : "") + "holds " + (top - frameBottom()));
    }
    top -= n;
  }

  /**
   * Closes the innermost MARK; the values above it are consumed. They stay readable in
   * {@code stack[returned, consumedEnd)} until the next push.
   */
  private int popMark() {
    if (markCount == 0) {
      throw problem("there is no MARK to close");
    }
    int from = marks[--markCount];
    consumedEnd = top;
    top = from;
    return from;
  }

  /** Checks the key/value pairs in {@code stack[from, to)} that a dict is about to take. */
  private void checkPairs(int from, int to) {
    if ((to - from) % 2 != 0) {
      throw problem("it needs key/value pairs but got an odd number of values (" + (to - from) + ")");
    }
    for (int i = from; i < to; i += 2) {
      int kind = (int) (stack[i] & 0xf);
      if (kind == K_LIST || kind == K_DICT) {
        throw problem("a dict key is " + KIND_NAMES[kind] + ", which cannot be a key");
      }
    }
  }

  /** The value the last op modifies (a list or dict just below what it consumed) must be that, and unshared. */
  private void modify(int kind) {
    if (top - frameBottom() < 1) {
      throw problem("there is no " + KIND_NAMES[kind].substring(2) + " to add to");
    }
    long target = stack[top - 1];
    int actual = (int) (target & 0xf);
    if (actual != kind) {
      throw problem("it adds to " + KIND_NAMES[actual] + ", expected " + KIND_NAMES[kind]);
    }
    if (shared.get((int) (target >>> 4))) {
      throw problem("it changes " + KIND_NAMES[kind] + " that was already fetched from the memo"
          + " (self-referencing data)");
    }
    if (whole.get((int) (target >>> 4))) {
      throw problem("it adds to a list after the list's own APPENDS, which PyTorch's pickler never does");
    }
  }

  /**
   * Decodes the list whose run {@link RepeatedLists#runEnd} accepted, starting at its EMPTY_LIST at {@code from}, into
   * a list that nothing will change, and leaves {@link #pos} past its APPENDS. Its values are what the generic
   * path would give them; a memo reference to a slot never stored, or a string that is not UTF-8, fails with the
   * generic path's message.
   */
  private List<Object> wholeList(int from) {
    List<Object> items = new ArrayList<>();
    pos = from + 2; // EMPTY_LIST, MARK
    while (true) {
      opStart = pos;
      op = data[pos++] & 0xff;
      switch (op) {
        case BINGET -> items.add(memoValue(u8()));
        case LONG_BINGET -> items.add(memoValue(u32()));
        case BININT1 -> items.add(u8());
        case BININT2 -> {
          pos += 2;
          items.add((data[pos - 2] & 0xff) | (data[pos - 1] & 0xff) << 8);
        }
        case BININT -> items.add((int) s32());
        case LONG1 -> items.add(longValue(u8(), "LONG1"));
        case BINFLOAT -> {
          long bits = 0;
          for (int i = 0; i < 8; i++) {
            bits = bits << 8 | (data[pos + i] & 0xffL);
          }
          pos += 8;
          items.add(Double.longBitsToDouble(bits));
        }
        case NONE -> items.add(null);
        case NEWTRUE -> items.add(Boolean.TRUE);
        case NEWFALSE -> items.add(Boolean.FALSE);
        case SHORT_BINUNICODE -> items.add(text(u8()));
        case EMPTY_LIST -> items.add(new RepeatedLists.Shared(wholeList(opStart).toArray(), -1));
        case APPENDS -> {
          return items;
        }
        default -> throw new IllegalStateException("opcode " + opName(op) + " in a run accepted as a list");
      }
    }
  }

  /** The value in memo slot {@code id}, as BINGET would push it. */
  private Object memoValue(long id) {
    int slot = storedSlot(id);
    if (((int) memo[slot] & 0xf) >= K_LIST) {
      fetched(slot);
    }
    return memoValues[slot];
  }

  /** The memo slot {@code id} names, which must have been stored. */
  private int storedSlot(long id) {
    if (id >= memo.length || memo[(int) id] == 0) {
      throw neverStored(id);
    }
    return (int) id;
  }

  /** Notes that the container in memo slot {@code slot} (a list or a dict: the kinds from K_LIST up) is shared now. */
  private void fetched(int slot) {
    shared.set((int) (memo[slot] >>> 4));
  }

  private DumpProblem neverStored(long id) {
    return problem("memo id " + id + " was never stored");
  }

  private void put(long id) {
    if (top - frameBottom() < 1) {
      throw problem("there is no value to store");
    }
    // Every pickler numbers its memo 0, 1, 2, …; a far-away id would only make the memo table huge.
    if (id > (long) memoSize + 256) {
      throw problem("memo id " + id + " skips ahead of the " + memoSize + " values stored so far");
    }
    int slot = (int) id;
    if (slot >= memo.length) {
      memo = Arrays.copyOf(memo, Math.max(slot + 1, memo.length * 2));
      memoValues = Arrays.copyOf(memoValues, memo.length);
    }
    if (memo[slot] == 0) {
      memoSize++;
    } else {
      repeated.clear();
      entries.forget();
    }
    memo[slot] = stack[top - 1];
    memoValues[slot] = values[top - 1];
  }

  private void get(long id) {
    Object value = memoValue(id);
    push(memo[(int) id], value);
  }
}
