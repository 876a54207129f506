package dev.frdiag.readers.pytorch;

/**
 * The pickle opcodes, with what a Flight Recorder dump may use of them: the few that {@code torch::jit::Pickler}
 * (and Python's pickler, for the same values) writes for dicts, lists, tuples, strings, numbers, bools and None
 * are allowed; those that import, call or look up anything outside the data are forbidden; the rest are known
 * but unused.
 */
final class PickleOpcodes {
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
  /** Opcodes the decoder accepts. */
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

  private PickleOpcodes() {}

  /** Name of an opcode for messages, e.g. "GLOBAL" or "0x3f". */
  static String opName(int op) {
    String name = NAMES[op & 0xff];
    return name != null ? name : String.format("0x%02x", op & 0xff);
  }

  /** Whether {@code op} is one of the opcodes a dump may use. */
  static boolean isAllowed(int op) {
    return op >= 0 && op < 256 && ALLOWED[op];
  }

  /** Whether the byte {@code op} (0 to 255) imports, calls or looks up something: never allowed in a dump. */
  static boolean isForbidden(int op) {
    return FORBIDDEN[op];
  }

  /** Whether the byte {@code op} (0 to 255) is an opcode of any pickle protocol. */
  static boolean isKnown(int op) {
    return NAMES[op] != null;
  }
}
