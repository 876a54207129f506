package dev.frdiag.testing.dumps;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * Writes pickle protocol 2 with the opcodes, and the memo habits, of PyTorch's C++ pickler
 * ({@code torch::jit::Pickler}): every string is memoized by value and written once, later uses are BINGETs;
 * containers are memoized only when the caller says they are shared, after they are complete; dicts and lists
 * are always {@code EMPTY_x MARK … SETITEMS/APPENDS}, even when empty; ints take the smallest of BININT1,
 * BININT2, BININT and an 8-byte LONG1.
 */
public final class PickleWriter {
  // Opcodes from the pickle specification (Lib/pickletools.py), kept apart from the reader's table so that
  // a wrong constant on one side shows up as a failed round trip instead of agreeing with itself.
  private static final int APPENDS = 'e';
  private static final int BINFLOAT = 'G';
  private static final int BINGET = 'h';
  private static final int BININT = 'J';
  private static final int BININT1 = 'K';
  private static final int BININT2 = 'M';
  private static final int BINPUT = 'q';
  private static final int BINUNICODE = 'X';
  private static final int EMPTY_DICT = '}';
  private static final int EMPTY_LIST = ']';
  private static final int LONG1 = 0x8a;
  private static final int LONG_BINGET = 'j';
  private static final int LONG_BINPUT = 'r';
  private static final int MARK = '(';
  private static final int NEWFALSE = 0x89;
  private static final int NEWTRUE = 0x88;
  private static final int NONE = 'N';
  private static final int PROTO = 0x80;
  private static final int SETITEMS = 'u';
  private static final int STOP = '.';
  private static final int TUPLE2 = 0x86;

  private final ByteArrayOutputStream out = new ByteArrayOutputStream(4096);
  private final Map<String, Integer> strings = new HashMap<>();
  private int nextMemoId;

  public PickleWriter() {
    out.write(PROTO);
    out.write(2);
  }

  public byte[] finish() {
    out.write(STOP);
    return out.toByteArray();
  }

  public void beginDict() {
    out.write(EMPTY_DICT);
    out.write(MARK);
  }

  public void endDict() {
    out.write(SETITEMS);
  }

  public void beginList() {
    out.write(EMPTY_LIST);
    out.write(MARK);
  }

  public void endList() {
    out.write(APPENDS);
  }

  /** Makes a tuple of the last two values. */
  public void tuple2() {
    out.write(TUPLE2);
  }

  public void string(String s) {
    Integer memo = strings.get(s);
    if (memo != null) {
      get(memo);
      return;
    }
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    out.write(BINUNICODE);
    littleEndian(bytes.length, 4);
    out.writeBytes(bytes);
    strings.put(s, put());
  }

  public void integer(long n) {
    if (n >= 0 && n <= 0xff) {
      out.write(BININT1);
      out.write((int) n);
    } else if (n >= 0 && n <= 0xffff) {
      out.write(BININT2);
      littleEndian(n, 2);
    } else if (n >= Integer.MIN_VALUE && n <= Integer.MAX_VALUE) {
      out.write(BININT);
      littleEndian(n, 4);
    } else {
      out.write(LONG1);
      out.write(8);
      littleEndian(n, 8);
    }
  }

  public void floating(double d) {
    out.write(BINFLOAT);
    long bits = Double.doubleToLongBits(d);
    for (int i = 7; i >= 0; i--) {
      out.write((int) (bits >>> (8 * i)));
    }
  }

  public void bool(boolean b) {
    out.write(b ? NEWTRUE : NEWFALSE);
  }

  public void none() {
    out.write(NONE);
  }

  /** Memoizes the value just written; returns its memo id. */
  public int put() {
    int id = nextMemoId++;
    if (id <= 0xff) {
      out.write(BINPUT);
      out.write(id);
    } else {
      out.write(LONG_BINPUT);
      littleEndian(id, 4);
    }
    return id;
  }

  /** Writes a reference to memoized value {@code id}. */
  public void get(int id) {
    if (id <= 0xff) {
      out.write(BINGET);
      out.write(id);
    } else {
      out.write(LONG_BINGET);
      littleEndian(id, 4);
    }
  }

  private void littleEndian(long value, int bytes) {
    for (int i = 0; i < bytes; i++) {
      out.write((int) (value >>> (8 * i)));
    }
  }
}
