package dev.frdiag.readers.pytorch;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.BitSet;

/**
 * Checks a pickle before anything is built from it: walks every opcode and simulates the unpickler's stack
 * with types only, so that the decoder that runs afterwards can neither instantiate a class, allocate a
 * buffer bigger than the file, pop an empty stack, cast to the wrong container, nor build a cycle.
 *
 * <p>What a Flight Recorder dump may contain is what {@code torch::jit::Pickler} writes for dicts, lists,
 * tuples, strings, ints, floats, bools and None (plus the few variants Python's own pickler uses for the same
 * values). Opcodes that import or call anything (GLOBAL, REDUCE, BUILD, …) are refused outright.
 */
final class PickleScanner {
  // Opcodes, as in CPython's Lib/pickle.py.
  static final int MARK = '(';
  static final int STOP = '.';
  static final int POP = '0';
  static final int POP_MARK = '1';
  static final int DUP = '2';
  static final int FLOAT = 'F';
  static final int INT = 'I';
  static final int BININT = 'J';
  static final int BININT1 = 'K';
  static final int LONG = 'L';
  static final int BININT2 = 'M';
  static final int NONE = 'N';
  static final int PERSID = 'P';
  static final int BINPERSID = 'Q';
  static final int REDUCE = 'R';
  static final int STRING = 'S';
  static final int BINSTRING = 'T';
  static final int SHORT_BINSTRING = 'U';
  static final int UNICODE = 'V';
  static final int BINUNICODE = 'X';
  static final int APPEND = 'a';
  static final int BUILD = 'b';
  static final int GLOBAL = 'c';
  static final int DICT = 'd';
  static final int EMPTY_DICT = '}';
  static final int APPENDS = 'e';
  static final int GET = 'g';
  static final int BINGET = 'h';
  static final int INST = 'i';
  static final int LONG_BINGET = 'j';
  static final int LIST = 'l';
  static final int EMPTY_LIST = ']';
  static final int OBJ = 'o';
  static final int PUT = 'p';
  static final int BINPUT = 'q';
  static final int LONG_BINPUT = 'r';
  static final int SETITEM = 's';
  static final int TUPLE = 't';
  static final int EMPTY_TUPLE = ')';
  static final int SETITEMS = 'u';
  static final int BINFLOAT = 'G';
  static final int PROTO = 0x80;
  static final int NEWOBJ = 0x81;
  static final int EXT1 = 0x82;
  static final int EXT2 = 0x83;
  static final int EXT4 = 0x84;
  static final int TUPLE1 = 0x85;
  static final int TUPLE2 = 0x86;
  static final int TUPLE3 = 0x87;
  static final int NEWTRUE = 0x88;
  static final int NEWFALSE = 0x89;
  static final int LONG1 = 0x8a;
  static final int LONG4 = 0x8b;
  static final int BINBYTES = 'B';
  static final int SHORT_BINBYTES = 'C';
  static final int SHORT_BINUNICODE = 0x8c;
  static final int BINUNICODE8 = 0x8d;
  static final int BINBYTES8 = 0x8e;
  static final int EMPTY_SET = 0x8f;
  static final int ADDITEMS = 0x90;
  static final int FROZENSET = 0x91;
  static final int NEWOBJ_EX = 0x92;
  static final int STACK_GLOBAL = 0x93;
  static final int MEMOIZE = 0x94;
  static final int FRAME = 0x95;
  static final int BYTEARRAY8 = 0x96;
  static final int NEXT_BUFFER = 0x97;
  static final int READONLY_BUFFER = 0x98;

  /** Highest pickle protocol a dump may declare (the decoder's own limit). */
  static final int HIGHEST_PROTOCOL = 5;

  private static final String[] NAMES = new String[256];
  /** Opcodes that import, call or look up something outside the data: never allowed. */
  private static final boolean[] FORBIDDEN = new boolean[256];
  /** Opcodes the scanner (and so the decoder) accepts. */
  private static final boolean[] ALLOWED = new boolean[256];

  static {
    name(MARK, "MARK");
    name(STOP, "STOP");
    name(POP, "POP");
    name(POP_MARK, "POP_MARK");
    name(DUP, "DUP");
    name(FLOAT, "FLOAT");
    name(INT, "INT");
    name(BININT, "BININT");
    name(BININT1, "BININT1");
    name(LONG, "LONG");
    name(BININT2, "BININT2");
    name(NONE, "NONE");
    name(PERSID, "PERSID");
    name(BINPERSID, "BINPERSID");
    name(REDUCE, "REDUCE");
    name(STRING, "STRING");
    name(BINSTRING, "BINSTRING");
    name(SHORT_BINSTRING, "SHORT_BINSTRING");
    name(UNICODE, "UNICODE");
    name(BINUNICODE, "BINUNICODE");
    name(APPEND, "APPEND");
    name(BUILD, "BUILD");
    name(GLOBAL, "GLOBAL");
    name(DICT, "DICT");
    name(EMPTY_DICT, "EMPTY_DICT");
    name(APPENDS, "APPENDS");
    name(GET, "GET");
    name(BINGET, "BINGET");
    name(INST, "INST");
    name(LONG_BINGET, "LONG_BINGET");
    name(LIST, "LIST");
    name(EMPTY_LIST, "EMPTY_LIST");
    name(OBJ, "OBJ");
    name(PUT, "PUT");
    name(BINPUT, "BINPUT");
    name(LONG_BINPUT, "LONG_BINPUT");
    name(SETITEM, "SETITEM");
    name(TUPLE, "TUPLE");
    name(EMPTY_TUPLE, "EMPTY_TUPLE");
    name(SETITEMS, "SETITEMS");
    name(BINFLOAT, "BINFLOAT");
    name(PROTO, "PROTO");
    name(NEWOBJ, "NEWOBJ");
    name(EXT1, "EXT1");
    name(EXT2, "EXT2");
    name(EXT4, "EXT4");
    name(TUPLE1, "TUPLE1");
    name(TUPLE2, "TUPLE2");
    name(TUPLE3, "TUPLE3");
    name(NEWTRUE, "NEWTRUE");
    name(NEWFALSE, "NEWFALSE");
    name(LONG1, "LONG1");
    name(LONG4, "LONG4");
    name(BINBYTES, "BINBYTES");
    name(SHORT_BINBYTES, "SHORT_BINBYTES");
    name(SHORT_BINUNICODE, "SHORT_BINUNICODE");
    name(BINUNICODE8, "BINUNICODE8");
    name(BINBYTES8, "BINBYTES8");
    name(EMPTY_SET, "EMPTY_SET");
    name(ADDITEMS, "ADDITEMS");
    name(FROZENSET, "FROZENSET");
    name(NEWOBJ_EX, "NEWOBJ_EX");
    name(STACK_GLOBAL, "STACK_GLOBAL");
    name(MEMOIZE, "MEMOIZE");
    name(FRAME, "FRAME");
    name(BYTEARRAY8, "BYTEARRAY8");
    name(NEXT_BUFFER, "NEXT_BUFFER");
    name(READONLY_BUFFER, "READONLY_BUFFER");
    for (int op : new int[] {GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1, EXT2, EXT4,
        PERSID, BINPERSID}) {
      FORBIDDEN[op] = true;
    }
    for (int op : new int[] {PROTO, FRAME, STOP, MARK, EMPTY_DICT, DICT, SETITEM, SETITEMS, EMPTY_LIST, LIST,
        APPEND, APPENDS, EMPTY_TUPLE, TUPLE, TUPLE1, TUPLE2, TUPLE3, BINUNICODE, SHORT_BINUNICODE, BINUNICODE8,
        BININT, BININT1, BININT2, LONG1, LONG4, BINFLOAT, NONE, NEWTRUE, NEWFALSE, BINPUT, LONG_BINPUT, MEMOIZE,
        BINGET, LONG_BINGET}) {
      ALLOWED[op] = true;
    }
  }

  private static void name(int op, String name) {
    NAMES[op] = name;
  }

  // Value kinds on the simulated stack; containers that can change (list, dict) also carry an id.
  private static final int K_STR = 1;
  private static final int K_INT = 2;
  private static final int K_FLOAT = 3;
  private static final int K_BOOL = 4;
  private static final int K_NONE = 5;
  private static final int K_TUPLE = 6;
  private static final int K_LIST = 7;
  private static final int K_DICT = 8;
  private static final String[] KIND_NAMES = {"?", "a string", "an int", "a float", "a bool", "None", "a tuple",
      "a list", "a dict"};

  private final byte[] data;
  private final int end;
  private int pos;
  private int opStart;
  private int op;

  /** Stack of values: {@code kind | containerId << 4}. */
  private long[] stack = new long[64];
  private int top;
  /** Stack heights at each open MARK. */
  private int[] marks = new int[16];
  private int markCount;
  /** End of the values the last {@link #popMark} consumed. */
  private int consumedEnd;
  /** Memo slots by id; 0 = empty. */
  private long[] memo = new long[64];
  /** Distinct memo ids stored so far: what Python's MEMOIZE numbers the next one with. */
  private int memoSize;
  private int containers;
  /** Containers fetched from the memo: changing them afterwards could build a cycle. */
  private final BitSet shared = new BitSet();
  private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
      .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);

  private PickleScanner(byte[] data, int length) {
    this.data = data;
    this.end = length;
  }

  /** Name of an opcode for messages, e.g. "GLOBAL" or "0x3f". */
  static String opName(int op) {
    String name = NAMES[op & 0xff];
    return name != null ? name : String.format("0x%02x", op & 0xff);
  }

  static boolean isAllowed(int op) {
    return op >= 0 && op < 256 && ALLOWED[op];
  }

  /**
   * Scans {@code data[0, length)}.
   *
   * @return the number of bytes up to and including the STOP opcode (anything after it is not part of the
   *     pickle)
   * @throws DumpProblem describing the first problem, with its byte offset
   */
  static int scan(byte[] data, int length) {
    return new PickleScanner(data, length).run();
  }

  private int run() {
    while (true) {
      if (pos >= end) {
        throw new DumpProblem("truncated pickle at byte " + end + " of " + end + ": it ends without a STOP opcode");
      }
      opStart = pos;
      op = data[pos++] & 0xff;
      if (FORBIDDEN[op]) {
        throw new DumpProblem("pickle opcode " + opName(op) + " at byte " + opStart
            + " is not allowed in a Flight Recorder dump");
      }
      if (!ALLOWED[op]) {
        throw new DumpProblem(NAMES[op] != null
            ? "pickle opcode " + opName(op) + " at byte " + opStart + " is not used by Flight Recorder dumps"
            : "invalid pickle opcode " + opName(op) + " at byte " + opStart);
      }
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
          return pos;
        }
        case MARK -> {
          if (markCount == marks.length) {
            marks = Arrays.copyOf(marks, markCount * 2);
          }
          marks[markCount++] = top;
        }
        case EMPTY_DICT -> push(container(K_DICT));
        case EMPTY_LIST -> push(container(K_LIST));
        case EMPTY_TUPLE -> push(K_TUPLE);
        case DICT -> {
          int from = popMark();
          checkPairs(from, consumedEnd);
          push(container(K_DICT));
        }
        case LIST -> {
          popMark();
          push(container(K_LIST));
        }
        case TUPLE -> {
          popMark();
          push(K_TUPLE);
        }
        case TUPLE1, TUPLE2, TUPLE3 -> {
          pop(op - TUPLE1 + 1);
          push(K_TUPLE);
        }
        case APPEND -> {
          pop(1);
          modify(K_LIST);
        }
        case APPENDS -> {
          popMark();
          modify(K_LIST);
        }
        case SETITEM -> {
          pop(2);
          checkPairs(top, top + 2);
          modify(K_DICT);
        }
        case SETITEMS -> {
          int from = popMark();
          checkPairs(from, consumedEnd);
          modify(K_DICT);
        }
        case BINUNICODE -> string(u32());
        case SHORT_BINUNICODE -> string(u8());
        case BINUNICODE8 -> string(u64());
        case BININT -> {
          need(4);
          pos += 4;
          push(K_INT);
        }
        case BININT1 -> {
          need(1);
          pos += 1;
          push(K_INT);
        }
        case BININT2 -> {
          need(2);
          pos += 2;
          push(K_INT);
        }
        case LONG1 -> {
          skip(u8(), "LONG1");
          push(K_INT);
        }
        case LONG4 -> {
          long n = s32();
          if (n < 0) {
            throw problem("negative length " + n);
          }
          skip(n, "LONG4");
          push(K_INT);
        }
        case BINFLOAT -> {
          need(8);
          pos += 8;
          push(K_FLOAT);
        }
        case NONE -> push(K_NONE);
        case NEWTRUE, NEWFALSE -> push(K_BOOL);
        case BINPUT -> put(u8());
        case LONG_BINPUT -> put(u32());
        case MEMOIZE -> put(memoSize);
        case BINGET -> get(u8());
        case LONG_BINGET -> get(u32());
        default -> throw new IllegalStateException("opcode " + opName(op) + " is allowed but not handled");
      }
    }
  }

  private DumpProblem problem(String what) {
    return new DumpProblem("pickle opcode " + opName(op) + " at byte " + opStart + ": " + what);
  }

  private void need(long n) {
    if (end - pos < n) {
      throw new DumpProblem("truncated pickle at byte " + opStart + " of " + end + ": " + opName(op) + " needs "
          + n + " more bytes but " + (end - pos) + " remain");
    }
  }

  private void skip(long n, String what) {
    if (end - pos < n) {
      throw new DumpProblem("truncated pickle at byte " + opStart + " of " + end + ": " + what + " declares " + n
          + " bytes but " + (end - pos) + " remain");
    }
    pos += (int) n;
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
      throw new DumpProblem("truncated pickle at byte " + opStart + " of " + end + ": " + opName(op)
          + " declares a string of " + Long.toUnsignedString(length) + " bytes but " + (end - pos) + " remain");
    }
    int n = (int) length;
    if (!isAscii(pos, n)) {
      try {
        utf8.reset().decode(ByteBuffer.wrap(data, pos, n));
      } catch (CharacterCodingException e) {
        throw problem("the string is not valid UTF-8");
      }
    }
    pos += n;
    push(K_STR);
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

  private void push(long value) {
    if (top == stack.length) {
      stack = Arrays.copyOf(stack, top * 2);
    }
    stack[top++] = value;
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
    }
    if (memo[slot] == 0) {
      memoSize++;
    }
    memo[slot] = stack[top - 1];
  }

  private void get(long id) {
    if (id >= memo.length || memo[(int) id] == 0) {
      throw problem("memo id " + id + " was never stored");
    }
    long value = memo[(int) id];
    int kind = (int) (value & 0xf);
    if (kind == K_LIST || kind == K_DICT) {
      shared.set((int) (value >>> 4));
    }
    push(value);
  }
}
