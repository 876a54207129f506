package dev.frdiag.readers.pytorch;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.razorvine.pickle.PickleException;
import net.razorvine.pickle.UnpickleStack;
import net.razorvine.pickle.Unpickler;

/**
 * The pickle decoder for dumps that {@link PickleScanner} has accepted. It refuses every opcode the scanner
 * does not allow (a second line of defence: nothing from a dump is ever instantiated), keeps dict entries in
 * file order, which the library's own dicts do not, and keeps the memo in an array, since PyTorch's pickles
 * fetch from it for nearly every key.
 *
 * <p>Values come out as {@code Map} (a {@link LinkedHashMap}), {@code List}, {@code Object[]} (tuples),
 * {@code String}, {@code Integer}/{@code Long}/{@code BigInteger}, {@code Double}, {@code Boolean} and null.
 * Not thread-safe; use one per pickle.
 */
final class SafeUnpickler extends Unpickler {
  private static final Object EMPTY = new Object();

  private Object[] values = new Object[64];
  private int distinct;

  private SafeUnpickler() {
    Arrays.fill(values, EMPTY);
  }

  /** Decodes {@code data[0, length)}, which must have passed {@link PickleScanner#scan}. */
  static Object decode(byte[] data, int length) throws IOException {
    return new SafeUnpickler().load(new Bytes(data, length));
  }

  @Override
  public Object load(InputStream stream) throws PickleException, IOException {
    stack = new Stack();
    input = stream;
    while (true) {
      int key = input.read();
      if (key < 0) {
        throw new IOException("premature end of file");
      }
      Object value = dispatch((short) key);
      if (value != NO_RETURN_VALUE) {
        return value;
      }
    }
  }

  @Override
  protected Object dispatch(short key) throws PickleException, IOException {
    switch (key) {
      case PickleOpcodes.EMPTY_DICT:
        stack.add(new LinkedHashMap<>());
        return NO_RETURN_VALUE;
      case PickleOpcodes.DICT: {
        Map<Object, Object> dict = new LinkedHashMap<>();
        putPairs(stack.pop_all_since_marker(), dict);
        stack.add(dict);
        return NO_RETURN_VALUE;
      }
      case PickleOpcodes.SETITEMS: {
        List<Object> pairs = stack.pop_all_since_marker();
        putPairs(pairs, asDict(stack.peek()));
        return NO_RETURN_VALUE;
      }
      case PickleOpcodes.BINPUT:
        put(input.read());
        return NO_RETURN_VALUE;
      case PickleOpcodes.LONG_BINPUT:
        put(u32());
        return NO_RETURN_VALUE;
      case PickleOpcodes.MEMOIZE:
        put(distinct);
        return NO_RETURN_VALUE;
      case PickleOpcodes.BINGET:
        stack.add(get(input.read()));
        return NO_RETURN_VALUE;
      case PickleOpcodes.LONG_BINGET:
        stack.add(get(u32()));
        return NO_RETURN_VALUE;
      default:
        if (!PickleOpcodes.isAllowed(key)) {
          throw new PickleException("pickle opcode " + PickleOpcodes.opName(key) + " is not allowed");
        }
        return super.dispatch(key);
    }
  }

  private void put(long id) {
    // The scanner bounds ids by the number of values stored so far, so the array stays small.
    int slot = (int) id;
    if (slot >= values.length) {
      int old = values.length;
      values = Arrays.copyOf(values, Math.max(slot + 1, old * 2));
      Arrays.fill(values, old, values.length, EMPTY);
    }
    if (values[slot] == EMPTY) {
      distinct++;
    }
    values[slot] = stack.peek();
  }

  private Object get(long id) {
    Object v = id < values.length ? values[(int) id] : EMPTY;
    if (v == EMPTY) {
      throw new PickleException("memo id " + id + " was never stored");
    }
    return v;
  }

  private long u32() throws IOException {
    long v = 0;
    for (int i = 0; i < 4; i++) {
      v |= (long) input.read() << (8 * i);
    }
    return v;
  }

  @SuppressWarnings("unchecked")
  private static Map<Object, Object> asDict(Object o) {
    return (Map<Object, Object>) o;
  }

  private static void putPairs(List<Object> pairs, Map<Object, Object> dict) {
    for (int i = 0; i + 1 < pairs.size(); i += 2) {
      dict.put(pairs.get(i), pairs.get(i + 1));
    }
  }

  /** The decoder's stack on an array: the library's own pops one value at a time and then reverses them. */
  private static final class Stack extends UnpickleStack {
    private static final long serialVersionUID = 1L;

    private Object[] items = new Object[64];
    private int size;

    @Override
    public void add(Object o) {
      if (size == items.length) {
        items = Arrays.copyOf(items, size * 2);
      }
      items[size++] = o;
    }

    @Override
    public void add_mark() {
      add(MARKER);
    }

    @Override
    public Object pop() {
      Object o = items[--size];
      items[size] = null;
      return o;
    }

    /** The scanner has checked that a MARK is open. Returns a mutable ArrayList, as the library casts it. */
    @Override
    public List<Object> pop_all_since_marker() {
      int mark = size - 1;
      while (items[mark] != MARKER) {
        mark--;
      }
      ArrayList<Object> out = new ArrayList<>(size - mark - 1);
      for (int i = mark + 1; i < size; i++) {
        out.add(items[i]);
      }
      Arrays.fill(items, mark, size, null);
      size = mark;
      return out;
    }

    @Override
    public Object peek() {
      return items[size - 1];
    }

    @Override
    public void trim() {}

    @Override
    public int size() {
      return size;
    }

    @Override
    public void clear() {
      Arrays.fill(items, 0, size, null);
      size = 0;
    }
  }

  /** An unsynchronized view of a byte array (ByteArrayInputStream locks on every read). */
  private static final class Bytes extends InputStream {
    private final byte[] data;
    private final int end;
    private int pos;

    Bytes(byte[] data, int end) {
      this.data = data;
      this.end = end;
    }

    @Override
    public int read() {
      return pos < end ? data[pos++] & 0xff : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (len == 0) {
        return 0;
      }
      int n = Math.min(len, end - pos);
      if (n <= 0) {
        return -1;
      }
      System.arraycopy(data, pos, b, off, n);
      pos += n;
      return n;
    }
  }
}
