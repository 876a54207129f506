package dev.frdiag.readers.pytorch;

import java.util.AbstractList;
import java.util.Arrays;
import java.util.List;
import java.util.RandomAccess;
import java.util.function.IntPredicate;

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

  int foundLength() {
    return foundLength;
  }

  /**
   * A list met before whose run of bytes {@code data} repeats from {@code from} (its EMPTY_LIST), or null. The
   * bytes of a run are a whole list (MARK … APPENDS), so the same bytes at {@code from} are that list, provided no
   * further batch of items follows them ({@code noMoreItems} says whether a byte may follow a run). Runs are found
   * by their first bytes (an entry's stack starts with the frames of its call site, its sizes are a few bytes in
   * all), so this usually answers with one comparison, without scanning or hashing the run.
   */
  Shared seen(byte[] data, int from, int end, IntPredicate noMoreItems) {
    int slot = prefixSlot(data, from, end);
    byte[] run = seenRuns[slot];
    if (run == null) {
      return null;
    }
    int to = from + run.length;
    if (to <= end && Arrays.equals(run, 0, run.length, data, from, to)
        && (to == end || noMoreItems.test(data[to] & 0xff))) {
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
