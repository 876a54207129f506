package dev.frdiag.readers.pytorch;

import java.util.concurrent.ConcurrentHashMap;

/**
 * One instance of each value the dumps of a job repeat (op and group names, dtypes, tensor shapes, the templates
 * records share), across every dump one reader reads. Records of different ranks then hold the same objects, and
 * comparing two ranks' records (what the analysis does for every member of every seq) is mostly comparing
 * references. Thread-safe; bounded, so that a reader kept for a long time keeps a bounded amount.
 */
final class Interner {
  /** Distinct values kept; past this, values are still looked up but no new one is kept. */
  static final int LIMIT = 1 << 16;

  private final ConcurrentHashMap<Object, Object> values = new ConcurrentHashMap<>();

  /** The instance equal to {@code value} met first, or {@code value} itself; values must be immutable. */
  @SuppressWarnings("unchecked")
  <T> T intern(T value) {
    if (value == null) {
      return null;
    }
    Object known = values.size() < LIMIT ? values.putIfAbsent(value, value) : values.get(value);
    return known == null ? value : (T) known;
  }
}
