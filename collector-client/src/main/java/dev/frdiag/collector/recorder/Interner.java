package dev.frdiag.collector.recorder;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An append-only table giving each distinct value a small int id, so ring slots store ids instead of objects.
 * Interning happens off the hot path (when a caller prepares an op, a tensor list or a stack); lookups by id
 * are lock-free reads of a published list.
 */
final class Interner<T> {
  private final Map<T, Integer> ids = new ConcurrentHashMap<>();
  private final Object lock = new Object();
  // Copy-on-write so readers on other threads see a fully built list without locking.
  private volatile List<T> values = List.of();

  int intern(T value) {
    Integer id = ids.get(value);
    if (id != null) {
      return id;
    }
    synchronized (lock) {
      id = ids.get(value);
      if (id == null) {
        List<T> next = new ArrayList<>(values);
        id = next.size();
        next.add(value);
        values = List.copyOf(next);
        ids.put(value, id);
      }
      return id;
    }
  }

  T get(int id) {
    return values.get(id);
  }

  int size() {
    return values.size();
  }
}
