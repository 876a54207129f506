package dev.frdiag.collector.pytorch;

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
final class PickleWriter {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream(4096);
  private final Map<String, Integer> strings = new HashMap<>();
  private int nextMemoId;

  PickleWriter() {
    out.write(PickleScanner.PROTO);
    out.write(2);
  }

  byte[] finish() {
    out.write(PickleScanner.STOP);
    return out.toByteArray();
  }

  void beginDict() {
    out.write(PickleScanner.EMPTY_DICT);
    out.write(PickleScanner.MARK);
  }

  void endDict() {
    out.write(PickleScanner.SETITEMS);
  }

  void beginList() {
    out.write(PickleScanner.EMPTY_LIST);
    out.write(PickleScanner.MARK);
  }

  void endList() {
    out.write(PickleScanner.APPENDS);
  }

  /** Makes a tuple of the last two values. */
  void tuple2() {
    out.write(PickleScanner.TUPLE2);
  }

  void string(String s) {
    Integer memo = strings.get(s);
    if (memo != null) {
      get(memo);
      return;
    }
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    out.write(PickleScanner.BINUNICODE);
    littleEndian(bytes.length, 4);
    out.writeBytes(bytes);
    strings.put(s, put());
  }

  void integer(long n) {
    if (n >= 0 && n <= 0xff) {
      out.write(PickleScanner.BININT1);
      out.write((int) n);
    } else if (n >= 0 && n <= 0xffff) {
      out.write(PickleScanner.BININT2);
      littleEndian(n, 2);
    } else if (n >= Integer.MIN_VALUE && n <= Integer.MAX_VALUE) {
      out.write(PickleScanner.BININT);
      littleEndian(n, 4);
    } else {
      out.write(PickleScanner.LONG1);
      out.write(8);
      littleEndian(n, 8);
    }
  }

  void floating(double d) {
    out.write(PickleScanner.BINFLOAT);
    long bits = Double.doubleToLongBits(d);
    for (int i = 7; i >= 0; i--) {
      out.write((int) (bits >>> (8 * i)));
    }
  }

  void bool(boolean b) {
    out.write(b ? PickleScanner.NEWTRUE : PickleScanner.NEWFALSE);
  }

  void none() {
    out.write(PickleScanner.NONE);
  }

  /** Memoizes the value just written; returns its memo id. */
  int put() {
    int id = nextMemoId++;
    if (id <= 0xff) {
      out.write(PickleScanner.BINPUT);
      out.write(id);
    } else {
      out.write(PickleScanner.LONG_BINPUT);
      littleEndian(id, 4);
    }
    return id;
  }

  /** Writes a reference to memoized value {@code id}. */
  void get(int id) {
    if (id <= 0xff) {
      out.write(PickleScanner.BINGET);
      out.write(id);
    } else {
      out.write(PickleScanner.LONG_BINGET);
      littleEndian(id, 4);
    }
  }

  private void littleEndian(long value, int bytes) {
    for (int i = 0; i < bytes; i++) {
      out.write((int) (value >>> (8 * i)));
    }
  }
}
