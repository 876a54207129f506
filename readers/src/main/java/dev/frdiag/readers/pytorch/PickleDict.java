package dev.frdiag.readers.pytorch;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Objects;

/**
 * A decoded pickle dict: keys and values in two arrays, in the order the file gives them (a key set twice keeps
 * its first place and its last value, as in Python). A dump holds one small dict per entry, some 20 keys each;
 * looking a key up by scanning 20 memo-shared strings beats hashing them into a {@code LinkedHashMap} per entry.
 * Past {@value #INDEXED_FROM} keys a hash index keeps lookups constant, so a hostile dict of a million keys stays
 * linear to build. Iteration cannot remove; {@link #put} is the one way to change it.
 */
final class PickleDict extends DecodedDict {
  private static final int INDEXED_FROM = 32;
  private static final Object[] NONE = new Object[0];
  private static final int[] NO_HASHES = new int[0];

  private Object[] keys;
  /** Each key's hash: strings cache theirs, so a miss costs an int compare rather than an equals. */
  private int[] hashes;
  private Object[] values;
  private int size;
  /** Key → position, once the dict has grown past a scan's worth of keys. */
  private HashMap<Object, Integer> index;
  /** Whether {@link #keys}, {@link #hashes} and {@link #index} are another dict's too (see {@link #setAll}). */
  private boolean keysShared;

  /** An empty dict: its arrays come with the first keys, sized for the batch that brings them. */
  PickleDict() {
    keys = NONE;
    hashes = NO_HASHES;
    values = NONE;
  }

  /** Makes room for {@code more} keys at once, as a SETITEMS batch brings them. */
  void reserve(int more) {
    if (size + more > keys.length) {
      grow(size + more);
    }
  }

  /**
   * Fills an empty dict with the keys of another dict that holds the same keys, none twice, and their values
   * from {@code stack[from, from + 2 * pairs)} (keys and values alternating). The two dicts share the key arrays
   * until one of them is given a key: a ring's entries are dicts of the same twenty keys.
   */
  void setAll(PickleDict sameKeys, Object[] stack, int from, int pairs) {
    keys = sameKeys.keys;
    hashes = sameKeys.hashes;
    index = sameKeys.index;
    keysShared = true;
    sameKeys.keysShared = true;
    values = new Object[pairs];
    for (int i = 0; i < pairs; i++) {
      values[i] = stack[from + 2 * i + 1];
    }
    size = pairs;
  }

  private void grow(int capacity) {
    keys = Arrays.copyOf(keys, capacity);
    hashes = Arrays.copyOf(hashes, capacity);
    values = Arrays.copyOf(values, capacity);
    if (keysShared) {
      index = index == null ? null : new HashMap<>(index);
      keysShared = false;
    }
  }

  private int find(Object key) {
    if (index != null) {
      Integer at = index.get(key);
      return at == null ? -1 : at;
    }
    int hash = Objects.hashCode(key);
    for (int i = 0; i < size; i++) {
      Object k = keys[i];
      // Memo-shared keys are the same instance: the identity test settles most lookups.
      if (k == key || (hashes[i] == hash && key != null && key.equals(k))) {
        return i;
      }
    }
    return -1;
  }

  @Override
  public Object put(Object key, Object value) {
    int at = find(key);
    if (at >= 0) {
      Object before = values[at];
      values[at] = value;
      return before;
    }
    if (size == keys.length || keysShared) {
      grow(Math.max(4, Math.max(size + 1, size * 2)));
    }
    keys[size] = key;
    hashes[size] = Objects.hashCode(key);
    values[size] = value;
    if (index != null) {
      index.put(key, size);
    } else if (size + 1 > INDEXED_FROM) {
      index = new HashMap<>(size * 2);
      for (int i = 0; i <= size; i++) {
        index.put(keys[i], i);
      }
    }
    size++;
    return null;
  }

  @Override
  public Object get(Object key) {
    int at = find(key);
    return at < 0 ? null : values[at];
  }

  @Override
  public boolean containsKey(Object key) {
    return find(key) >= 0;
  }

  /** The key at {@code i}, in file order ({@code 0 <= i < size()}). */
  @Override
  Object keyAt(int i) {
    return keys[i];
  }

  /** The value at {@code i}, in file order ({@code 0 <= i < size()}). */
  @Override
  Object valueAt(int i) {
    return values[i];
  }

  @Override
  public int size() {
    return size;
  }
}
