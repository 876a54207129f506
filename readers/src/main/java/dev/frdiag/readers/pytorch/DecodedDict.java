package dev.frdiag.readers.pytorch;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.BiConsumer;

/** A dict the pickle decoder built: its keys and values by position, in the order the file gives them. */
abstract class DecodedDict extends AbstractMap<Object, Object> {
  abstract Object keyAt(int i);

  abstract Object valueAt(int i);

  @Override
  public void forEach(BiConsumer<? super Object, ? super Object> action) {
    for (int i = 0; i < size(); i++) {
      action.accept(keyAt(i), valueAt(i));
    }
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
            return next < size();
          }

          @Override
          public Map.Entry<Object, Object> next() {
            if (next >= size()) {
              throw new NoSuchElementException();
            }
            int i = next++;
            return new SimpleImmutableEntry<>(keyAt(i), valueAt(i));
          }
        };
      }

      @Override
      public int size() {
        return DecodedDict.this.size();
      }
    };
  }
}
