package dev.frdiag.readers.pytorch;

import static dev.frdiag.readers.pytorch.PickleOpcodes.APPEND;
import static dev.frdiag.readers.pytorch.PickleOpcodes.APPENDS;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BINFLOAT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BINGET;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BININT;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BININT1;
import static dev.frdiag.readers.pytorch.PickleOpcodes.BININT2;
import static dev.frdiag.readers.pytorch.PickleOpcodes.EMPTY_LIST;
import static dev.frdiag.readers.pytorch.PickleOpcodes.LONG1;
import static dev.frdiag.readers.pytorch.PickleOpcodes.LONG_BINGET;
import static dev.frdiag.readers.pytorch.PickleOpcodes.MARK;
import static dev.frdiag.readers.pytorch.PickleOpcodes.NEWFALSE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.NEWTRUE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.NONE;
import static dev.frdiag.readers.pytorch.PickleOpcodes.SHORT_BINUNICODE;

import java.util.AbstractList;
import java.util.Arrays;
import java.util.List;
import java.util.RandomAccess;

/**
 * The lists a dump writes again and again, each decoded once per distinct encoding. Every entry of a ring repeats
 * one of a few stacks (73 frames at a time, each a memo reference to a frame dict written once), a few tensor
 * shapes and dtypes; PyTorch's pickler writes each such list whole, in one run of bytes made of memo references,
 * ints and nested lists ({@code EMPTY_LIST MARK … APPENDS}). Two runs of the same bytes in one pickle are the same
 * value as long as the memo slots they refer to were not stored again, so the decoder looks a run up here before
 * decoding it, and every entry that repeats it shares one {@link Shared} list. Not thread-safe; one per pickle.
 */
final class RepeatedLists {
  /** A list decoded from a run of bytes, shared by every place the pickle repeats those bytes. Immutable. */
  static final class Shared extends AbstractList<Object> implements RandomAccess {
    private final Object[] items;
    /** Numbers the distinct lists of one pickle from 0, so readers can keep what they derive in arrays. */
    final int id;

    Shared(Object[] items, int id) {
      this.items = items;
      this.id = id;
    }

    @Override
    public Object get(int index) {
      return items[index];
    }

    @Override
    public int size() {
      return items.length;
    }
  }

  private static final int INITIAL_CAPACITY = 64;

  /** Open addressing by the runs' hashes: the bytes of each run, its hash and its list. */
  private byte[][] runs = new byte[INITIAL_CAPACITY][];
  private int[] hashes = new int[INITIAL_CAPACITY];
  private Shared[] lists = new Shared[INITIAL_CAPACITY];
  private int size;
  private int nextId;

  /** Runs met before, by a hash of the bytes they start with: tried before a run is scanned at all. */
  private static final int SEEN_BITS = 8;
  private static final int PREFIX = 16;
  private final byte[][] seenRuns = new byte[1 << SEEN_BITS][];
  private final Shared[] seenLists = new Shared[1 << SEEN_BITS];
  /** How many bytes the run {@link #seen} found last takes. */
  private int foundLength;
  /** The hash of the run {@link #runEnd} last accepted. */
  private int runHash;

  int foundLength() {
    return foundLength;
  }

  /**
   * A list met before whose run of bytes {@code data} repeats from {@code from} (its EMPTY_LIST), or null. The
   * bytes of a run are a whole list (MARK … APPENDS), so the same bytes at {@code from} are that list, provided no
   * further batch of items follows them (see {@link #endsAList}). Runs are found
   * by their first bytes (an entry's stack starts with the frames of its call site, its sizes are a few bytes in
   * all), so this usually answers with one comparison, without scanning or hashing the run.
   */
  Shared seen(byte[] data, int from, int end) {
    int slot = prefixSlot(data, from, end);
    byte[] run = seenRuns[slot];
    if (run == null) {
      return null;
    }
    int to = from + run.length;
    if (to <= end && Arrays.equals(run, 0, run.length, data, from, to)
        && (to == end || endsAList(data[to] & 0xff))) {
      foundLength = run.length;
      return seenLists[slot];
    }
    return null;
  }

  /** Remembers the run {@code data[from, to)} of {@code list}, in data that ends at {@code end}, for {@link #seen}. */
  void seen(byte[] data, int from, int to, int end, Shared list) {
    int slot = prefixSlot(data, from, end);
    seenRuns[slot] = Arrays.copyOfRange(data, from, to);
    seenLists[slot] = list;
  }

  private static int prefixSlot(byte[] data, int from, int end) {
    int h = 0;
    for (int i = from, last = Math.min(end, from + PREFIX); i < last; i++) {
      h = h * 31 + data[i];
    }
    h *= 0x9E3779B1;
    return h >>> (32 - SEEN_BITS);
  }

  /**
   * Where the list that starts at {@code from} (just past its EMPTY_LIST) ends, when it is written the way PyTorch
   * writes the lists its entries repeat: MARK, then only memo references, ints, None, bools, floats, short strings
   * and nested lists of the same kind, then the APPENDS that closes it, and no more items after it. Its hash is
   * left for {@link #runHash}. Anything else, including a run cut short by the end of the data, is -1: the decoder's
   * generic path then reads it and names what is wrong.
   */
  int runEnd(byte[] data, int from, int end) {
    int p = from;
    int depth = 0;
    int h = EMPTY_LIST;
    while (true) {
      if (p >= end || (data[p] & 0xff) != MARK) {
        return -1;
      }
      p++;
      depth++;
      while (true) {
        // A stack is a run of memo references: read them four bytes at a time.
        while (p + 5 <= end && data[p] == LONG_BINGET) {
          h = h * 31 + ((data[p + 1] & 0xff) | (data[p + 2] & 0xff) << 8 | (data[p + 3] & 0xff) << 16
              | data[p + 4] << 24);
          p += 5;
        }
        while (p + 2 <= end && data[p] == BINGET) {
          h = h * 31 + (data[p + 1] & 0xff) + 0x100;
          p += 2;
        }
        if (p >= end) {
          return -1;
        }
        int code = data[p] & 0xff;
        int arg;
        switch (code) {
          case BINGET, BININT1 -> arg = 1;
          case BININT2 -> arg = 2;
          case LONG_BINGET, BININT -> arg = 4;
          case BINFLOAT -> arg = 8;
          case NONE, NEWTRUE, NEWFALSE -> arg = 0;
          case LONG1 -> {
            if (p + 1 >= end || (data[p + 1] & 0xff) > 8) {
              return -1;
            }
            arg = 1 + (data[p + 1] & 0xff);
          }
          case SHORT_BINUNICODE -> {
            if (p + 1 >= end) {
              return -1;
            }
            arg = 1 + (data[p + 1] & 0xff);
          }
          case EMPTY_LIST -> arg = -1;
          case APPENDS -> arg = -2;
          default -> {
            return -1;
          }
        }
        if (arg == -1) {
          h = h * 31 + code;
          p++;
          break; // a nested list: its MARK is checked by the outer loop
        }
        if (arg == -2) {
          h = h * 31 + code;
          p++;
          if (--depth == 0) {
            // Another batch of items for this list (APPEND, or MARK … APPENDS) would change it after the fact.
            if (p < end && !endsAList(data[p] & 0xff)) {
              return -1;
            }
            runHash = h ^ (h >>> 15) ^ (h >>> 7) * 0x9E3779B1;
            return p;
          }
          continue;
        }
        if (end - p - 1 < arg) {
          return -1;
        }
        h = h * 31 + code;
        for (int i = 1; i <= arg; i++) {
          h = h * 31 + data[p + i];
        }
        p += 1 + arg;
      }
    }
  }

  /** Whether opcode {@code next} may follow a whole list: anything but more items for it. */
  static boolean endsAList(int next) {
    return next != MARK && next != APPEND;
  }

  /** The hash of the run {@link #runEnd} last accepted. */
  int runHash() {
    return runHash;
  }

  /** The list the bytes {@code data[from, to)} (whose hash is {@code hash}) decoded to before, or null. */
  Shared find(byte[] data, int from, int to, int hash) {
    int mask = runs.length - 1;
    for (int i = hash & mask; runs[i] != null; i = (i + 1) & mask) {
      byte[] run = runs[i];
      if (hashes[i] == hash && run.length == to - from && Arrays.equals(run, 0, run.length, data, from, to)) {
        return lists[i];
      }
    }
    return null;
  }

  /** Keeps {@code items}, decoded from {@code data[from, to)}, as the list those bytes stand for. */
  Shared add(byte[] data, int from, int to, int hash, List<Object> items) {
    if ((size + 1) * 2 > runs.length) {
      grow();
    }
    Shared list = new Shared(items.toArray(), nextId++);
    insert(Arrays.copyOfRange(data, from, to), hash, list);
    size++;
    return list;
  }

  /**
   * Forgets every run: a memo slot was stored again, so the same bytes may now refer to another value. PyTorch's
   * pickler never does this; a pickle that does is read correctly, only without sharing.
   */
  void clear() {
    Arrays.fill(runs, null);
    Arrays.fill(lists, null);
    size = 0;
    Arrays.fill(seenRuns, null);
    Arrays.fill(seenLists, null);
  }

  private void grow() {
    byte[][] oldRuns = runs;
    int[] oldHashes = hashes;
    Shared[] oldLists = lists;
    runs = new byte[oldRuns.length * 2][];
    hashes = new int[runs.length];
    lists = new Shared[runs.length];
    for (int i = 0; i < oldRuns.length; i++) {
      if (oldRuns[i] != null) {
        insert(oldRuns[i], oldHashes[i], oldLists[i]);
      }
    }
  }

  private void insert(byte[] run, int hash, Shared list) {
    int mask = runs.length - 1;
    int i = hash & mask;
    while (runs[i] != null) {
      i = (i + 1) & mask;
    }
    runs[i] = run;
    hashes[i] = hash;
    lists[i] = list;
  }
}
