package dev.frdiag.readers.pytorch;

import dev.frdiag.testing.dumps.PickleWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Value trees to and from pickle bytes, for building malformed dumps in tests. */
final class Pickles {
  private Pickles() {}

  /** Encodes maps, lists, 2-tuples ({@code Object[]}), strings, ints, floats, bools and null. */
  static byte[] encode(Object value) {
    PickleWriter w = new PickleWriter();
    write(w, value);
    return w.finish();
  }

  /** Decodes as the reader does, into maps and lists the test may change. */
  static Object decode(byte[] pickle) {
    return mutable(PickleDecoder.decode(pickle, pickle.length).value());
  }

  private static Object mutable(Object v) {
    if (v instanceof Map<?, ?> m) {
      Map<Object, Object> copy = new LinkedHashMap<>();
      m.forEach((k, value) -> copy.put(k, mutable(value)));
      return copy;
    }
    if (v instanceof List<?> l) {
      List<Object> copy = new ArrayList<>(l.size());
      l.forEach(item -> copy.add(mutable(item)));
      return copy;
    }
    return v;
  }

  private static void write(PickleWriter w, Object v) {
    if (v instanceof Map<?, ?> m) {
      w.beginDict();
      for (Map.Entry<?, ?> e : m.entrySet()) {
        write(w, e.getKey());
        write(w, e.getValue());
      }
      w.endDict();
    } else if (v instanceof List<?> l) {
      w.beginList();
      l.forEach(item -> write(w, item));
      w.endList();
    } else if (v instanceof Object[] t && t.length == 2) {
      write(w, t[0]);
      write(w, t[1]);
      w.tuple2();
    } else if (v instanceof String s) {
      w.string(s);
    } else if (v instanceof Integer || v instanceof Long) {
      w.integer(((Number) v).longValue());
    } else if (v instanceof Double d) {
      w.floating(d);
    } else if (v instanceof Boolean b) {
      w.bool(b);
    } else if (v == null) {
      w.none();
    } else {
      throw new IllegalArgumentException("cannot pickle " + v.getClass());
    }
  }

  /**
   * Where each opcode of a well-formed pickle in PyTorch's layout starts (the opcodes PyTorch and
   * {@link PickleWriter} use: every argument is fixed-size or has its length in front).
   */
  static List<Integer> opcodeOffsets(byte[] pickle) {
    List<Integer> offsets = new java.util.ArrayList<>();
    int pos = 0;
    while (pos < pickle.length) {
      offsets.add(pos);
      int op = pickle[pos++] & 0xff;
      switch (op) {
        case PickleOpcodes.PROTO, PickleOpcodes.BINPUT, PickleOpcodes.BINGET, PickleOpcodes.BININT1 -> pos += 1;
        case PickleOpcodes.BININT2 -> pos += 2;
        case PickleOpcodes.BININT, PickleOpcodes.LONG_BINPUT, PickleOpcodes.LONG_BINGET -> pos += 4;
        case PickleOpcodes.BINFLOAT -> pos += 8;
        case PickleOpcodes.LONG1 -> pos += 1 + (pickle[pos] & 0xff);
        case PickleOpcodes.BINUNICODE -> pos += 4 + ((pickle[pos] & 0xff) | (pickle[pos + 1] & 0xff) << 8
            | (pickle[pos + 2] & 0xff) << 16 | (pickle[pos + 3] & 0xff) << 24);
        case PickleOpcodes.STOP -> pos = pickle.length;
        default -> { }
      }
    }
    return offsets;
  }
}
