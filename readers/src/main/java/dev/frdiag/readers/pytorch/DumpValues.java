package dev.frdiag.readers.pytorch;

import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * Typed access to the value tree a dump decodes to (maps, lists, tuples as {@code Object[]}, strings, numbers,
 * booleans and null). A value of the wrong type fails with one message that says where it sits and what it is,
 * in the words of the dump's Python side: {@code entries[3] (record_id 17)['state'] is an int, expected a
 * string}.
 */
final class DumpValues {
  private DumpValues() {}

  /** Where a value sits in the dump; rendered only when a message needs it. */
  record At(Object parent, Object key) {
    @Override
    public String toString() {
      return parent + (key instanceof Integer i ? "[" + i + "]" : "['" + key + "']");
    }
  }

  /** An entry, named with its record id once that is known. */
  record EntryAt(int index, long recordId) {
    @Override
    public String toString() {
      return "entries[" + index + "] (record_id " + recordId + ")";
    }
  }

  static Map<?, ?> dict(Object v, Object where) {
    if (v instanceof Map<?, ?> m) {
      return m;
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a dict");
  }

  static List<?> list(Object v, Object where) {
    if (v instanceof List<?> l) {
      return l;
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a list");
  }

  static String string(Object v, Object where) {
    if (v instanceof String s) {
      return s;
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a string");
  }

  static boolean bool(Object v, Object where) {
    if (v instanceof Boolean b) {
      return b;
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a bool");
  }

  static long integer(Object v, Object where) {
    if (v instanceof Integer || v instanceof Long) {
      return ((Number) v).longValue();
    }
    if (v instanceof BigInteger big) {
      if (big.bitLength() < 64) {
        return big.longValue();
      }
      throw new DumpProblem(where + " is " + abbreviate(big.toString()) + ", out of the 64-bit range");
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected an int");
  }

  static double number(Object v, Object where) {
    if (v instanceof Double d) {
      return d;
    }
    if (v instanceof Integer || v instanceof Long || v instanceof BigInteger) {
      return ((Number) v).doubleValue();
    }
    throw new DumpProblem(where + " is " + describe(v) + ", expected a float");
  }

  static long requiredInteger(Map<?, ?> m, String key, Object where) {
    if (!m.containsKey(key)) {
      throw new DumpProblem(where + ": missing key '" + key + "'");
    }
    return integer(m.get(key), new At(where, key));
  }

  static long optionalInteger(Map<?, ?> m, String key, Object where, long absent) {
    return m.containsKey(key) ? integer(m.get(key), new At(where, key)) : absent;
  }

  /** Describes a decoded value's type in the words of the dump's Python side. */
  static String describe(Object v) {
    if (v == null) {
      return "None";
    }
    if (v instanceof String) {
      return "a string";
    }
    if (v instanceof Boolean) {
      return "a bool";
    }
    if (v instanceof Integer || v instanceof Long || v instanceof BigInteger) {
      return "an int";
    }
    if (v instanceof Double) {
      return "a float";
    }
    if (v instanceof List) {
      return "a list";
    }
    if (v instanceof Map) {
      return "a dict";
    }
    if (v instanceof Object[]) {
      return "a tuple";
    }
    return "a " + v.getClass().getSimpleName();
  }

  /** A dict key for a message: a string quoted and abbreviated, anything else by its type. */
  static String keyText(Object key) {
    return key instanceof String s ? "'" + abbreviate(s) + "'" : describe(key);
  }

  /** Up to eight names, quoted and abbreviated, for a message. */
  static String quoted(List<String> names) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < names.size() && i < 8; i++) {
      sb.append(i == 0 ? "" : ", ").append('\'').append(abbreviate(names.get(i))).append('\'');
    }
    if (names.size() > 8) {
      sb.append(", …");
    }
    return sb.toString();
  }

  /** Non-empty and only ASCII digits. */
  static boolean isDigits(String s) {
    if (s.isEmpty()) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return false;
      }
    }
    return true;
  }

  /** Text from a dump cut to 64 characters, so that a message stays one readable line. */
  static String abbreviate(String s) {
    return s.length() <= 64 ? s : s.substring(0, 64) + "…";
  }
}
