package dev.frdiag.readers.pytorch;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * An entry dict {@link PickleDecoder} read straight from its bytes: its values by {@link EntryKey}, so that
 * {@link EntryDecoder} takes them without looking a key up. As a map it is what the generic path would have given:
 * the same keys, in the file's order, with the same values.
 */
final class EntryDict extends AbstractMap<Object, Object> {
  private final Object[] fields;
  /** The keys' ordinals in file order; entries of one ring share one array. */
  private final byte[] order;

  /**
   * @param fields the values by key ordinal, null where the entry lacks the key and {@link EntryKey#NONE} for a
   *     None; kept, not copied
   * @param order the ordinals of the keys present, in file order; kept, not copied
   */
  EntryDict(Object[] fields, byte[] order) {
    this.fields = fields;
    this.order = order;
  }

  /** The values by key ordinal (see the constructor); the caller must not change them. */
  Object[] fields() {
    return fields;
  }

  @Override
  public int size() {
    return order.length;
  }

  @Override
  public Set<Map.Entry<Object, Object>> entrySet() {
    return new AbstractSet<>() {
      @Override
      public Iterator<Map.Entry<Object, Object>> iterator() {
        return new Iterator<>() {
          private int next;

          @Override
          public boolean hasNext() {
            return next < order.length;
          }

          @Override
          public Map.Entry<Object, Object> next() {
            if (next >= order.length) {
              throw new NoSuchElementException();
            }
            int k = order[next++];
            return new SimpleImmutableEntry<>(EntryKey.of(k).text, fields[k] == EntryKey.NONE ? null : fields[k]);
          }
        };
      }

      @Override
      public int size() {
        return order.length;
      }
    };
  }
}
