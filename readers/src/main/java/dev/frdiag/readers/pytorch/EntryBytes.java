package dev.frdiag.readers.pytorch;

import static dev.frdiag.readers.pytorch.PickleOpcodes.APPEND;
import static dev.frdiag.readers.pytorch.PickleOpcodes.APPENDS;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BINFLOAT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BINGET;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BININT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BININT1;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BININT2;
import static dev.frdiag.readers.pytorch.PickleOpcodes.EMPTY_DICT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.EMPTY_LIST;
import static dev.frdiag.readers.pytorch.PickleOpcodes.LONG1;
import static dev.frdiag.readers.pytorch.PickleOpcodes.LONG_BINGET;
import static dev.frdiag.readers.pytorch.PickleOpcodes.MARK;
import static dev.frdiag.readers.pytorch.PickleOpcodes.NEWFALSE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.NEWTRUE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.NONE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.SETITEMS;
import static dev.frdiag.readers.pytorch.PickleOpcodes.TUPLE2;

import java.util.Arrays;

/**
 * Reads an entry dict straight from a pickle's bytes, the way a ring's entries are written once the first few have
 * stored their strings and lists: {@code EMPTY_DICT MARK}, then pairs of a memo-shared key and a value that is an
 * int, None, a bool, a float, a memo-shared string, a pair of them ({@code TUPLE2}) or a list written before
 * ({@link RepeatedLists}), then {@code SETITEMS}, followed by the next entry or the end of the list. Anything else
 * (a key entries do not have, a key twice, a string or list met for the first time, a value stored in the memo, a
 * dict changed or stored after its SETITEMS) is left to the generic path, which reads it as it always did: this
 * reads nothing the generic path would read otherwise, it only skips building a {@link PickleDict} and looking its
 * keys up. Not thread-safe; one per pickle.
 */
final class EntryBytes {
  /** Per memo id: 0 not looked at yet, -1 not an entry key, else the key's ordinal + 1. */
  private int[] keyOfMemo = new int[64];
  private final byte[] order = new byte[EntryKey.COUNT];
  /** The last key order read: entries of one ring share it. */
  private byte[] lastOrder = new byte[0];
  private final RepeatedLists repeated;
  private final int listKind;
  private EntryDict dict;
  /** The memo id {@link #memoRef} read last. */
  private int refId;

  /**
   * @param repeated the lists the generic path read whole, shared by the entries that repeat them
   * @param listKind the lowest memo kind that is a container: such a value is left to the generic path, which
   *     notes that it is shared
   */
  EntryBytes(RepeatedLists repeated, int listKind) {
    this.repeated = repeated;
    this.listKind = listKind;
  }

  /** The dict {@link #read} read last. */
  EntryDict dict() {
    return dict;
  }

  /** Forgets what memo ids were: a slot was stored again. */
  void forget() {
    Arrays.fill(keyOfMemo, 0);
  }

  /**
   * Reads the entry dict whose EMPTY_DICT is at {@code data[from]}.
   *
   * @param memo the memo's kinds by id (0 = never stored), as the generic path keeps them
   * @return where the dict ends (past its SETITEMS), or -1 when the generic path must read it
   */
  int read(byte[] data, int from, int end, long[] memo, Object[] memoValues) {
    int p = from + 1;
    if (p >= end || (data[p] & 0xff) != MARK) {
      return -1;
    }
    p++;
    Object[] fields = null;
    int count = 0;
    int seen = 0;
    while (true) {
      if (p + 1 >= end) {
        return -1;
      }
      int code = data[p] & 0xff;
      if (code == SETITEMS) {
        p++;
        break;
      }
      // The key: a memo reference to a string entries have, not seen yet in this dict.
      int id;
      if (code == BINGET) {
        id = data[p + 1] & 0xff;
        p += 2;
      } else if (code == LONG_BINGET && p + 5 <= end) {
        id = u32(data, p + 1);
        p += 5;
      } else {
        return -1;
      }
      int key = key(id, memo, memoValues);
      if (key < 0 || (seen & 1 << key) != 0) {
        return -1;
      }
      seen |= 1 << key;
      if (fields == null) {
        fields = new Object[EntryKey.COUNT];
      }
      order[count++] = (byte) key;
      // The value.
      if (p >= end) {
        return -1;
      }
      code = data[p] & 0xff;
      Object value;
      switch (code) {
        case BININT1 -> {
          if (p + 2 > end) {
            return -1;
          }
          value = data[p + 1] & 0xff;
          p += 2;
        }
        case BININT2 -> {
          if (p + 3 > end) {
            return -1;
          }
          value = (data[p + 1] & 0xff) | (data[p + 2] & 0xff) << 8;
          p += 3;
        }
        case BININT -> {
          if (p + 5 > end) {
            return -1;
          }
          value = u32(data, p + 1);
          p += 5;
        }
        case LONG1 -> {
          int n = p + 1 < end ? data[p + 1] & 0xff : 9;
          if (n > 8 || p + 2 + n > end) {
            return -1;
          }
          value = long1(data, p + 2, n);
          p += 2 + n;
        }
        case BINFLOAT -> {
          if (p + 9 > end) {
            return -1;
          }
          long bits = 0;
          for (int i = 1; i <= 8; i++) {
            bits = bits << 8 | (data[p + i] & 0xffL);
          }
          value = Double.longBitsToDouble(bits);
          p += 9;
        }
        case NONE -> {
          value = EntryKey.NONE;
          p++;
        }
        case NEWTRUE -> {
          value = Boolean.TRUE;
          p++;
        }
        case NEWFALSE -> {
          value = Boolean.FALSE;
          p++;
        }
        case BINGET, LONG_BINGET -> {
          p = memoRef(data, p, end, memo);
          if (p < 0) {
            return -1;
          }
          value = memoValues[refId];
          // Two memo references and TUPLE2: a (name, desc) pair, which PyTorch does not store in the memo.
          int second = p < end ? data[p] & 0xff : -1;
          if (second == BINGET || second == LONG_BINGET) {
            int firstId = refId;
            int q = memoRef(data, p, end, memo);
            if (q >= 0 && q < end && (data[q] & 0xff) == TUPLE2) {
              value = new Object[] {memoValues[firstId], memoValues[refId]};
              p = q + 1;
            }
          }
        }
        case EMPTY_LIST -> {
          RepeatedLists.Shared list = repeated.seen(data, p, end);
          if (list != null) {
            p += repeated.foundLength();
          } else {
            // Stacks that start alike share a slot of the quick look: the run is looked up whole, as the generic
            // path looks it up, but never decoded here.
            int runEnd = repeated.runEnd(data, p + 1, end);
            list = runEnd < 0 ? null : repeated.find(data, p, runEnd, repeated.runHash());
            if (list == null) {
              return -1;
            }
            repeated.seen(data, p, runEnd, end, list);
            p = runEnd;
          }
          value = list;
        }
        default -> {
          return -1;
        }
      }
      fields[key] = value;
    }
    // What follows must leave the dict as it is: the next entry, or the end of the list that holds it.
    int next = p < end ? data[p] & 0xff : -1;
    if (fields == null || next != EMPTY_DICT && next != APPENDS && next != APPEND) {
      return -1;
    }
    if (count != lastOrder.length || !Arrays.equals(order, 0, count, lastOrder, 0, count)) {
      lastOrder = Arrays.copyOf(order, count);
    }
    dict = new EntryDict(fields, lastOrder);
    return p;
  }

  /**
   * Reads the BINGET or LONG_BINGET at {@code p} (leaving its id in {@link #refId}) and returns where it ends, or
   * -1 when it names a slot never stored or a container.
   */
  private int memoRef(byte[] data, int p, int end, long[] memo) {
    int id;
    int next;
    if ((data[p] & 0xff) == BINGET) {
      if (p + 2 > end) {
        return -1;
      }
      id = data[p + 1] & 0xff;
      next = p + 2;
    } else {
      if (p + 5 > end) {
        return -1;
      }
      id = u32(data, p + 1);
      next = p + 5;
    }
    if (id < 0 || id >= memo.length || memo[id] == 0 || ((int) memo[id] & 0xf) >= listKind) {
      return -1;
    }
    refId = id;
    return next;
  }

  /** The ordinal of the entry key in memo slot {@code id}, or -1. */
  private int key(int id, long[] memo, Object[] memoValues) {
    if (id < 0 || id >= memo.length || memo[id] == 0) {
      return -1;
    }
    if (id >= keyOfMemo.length) {
      keyOfMemo = Arrays.copyOf(keyOfMemo, Math.max(id + 1, keyOfMemo.length * 2));
    }
    int known = keyOfMemo[id];
    if (known == 0) {
      EntryKey key = memoValues[id] instanceof String text ? EntryKey.named(text) : null;
      known = key == null ? -1 : key.ordinal() + 1;
      keyOfMemo[id] = known;
    }
    return known < 0 ? -1 : known - 1;
  }

  private static int u32(byte[] data, int p) {
    return (data[p] & 0xff) | (data[p + 1] & 0xff) << 8 | (data[p + 2] & 0xff) << 16 | data[p + 3] << 24;
  }

  /** LONG1's little-endian two's complement of {@code n} (at most 8) bytes, as the generic path decodes it. */
  private static Long long1(byte[] data, int from, int n) {
    if (n == 0) {
      return 0L;
    }
    long v = data[from + n - 1];
    for (int i = n - 2; i >= 0; i--) {
      v = v << 8 | (data[from + i] & 0xffL);
    }
    return v;
  }
}
