package dev.frdiag.report;

import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Checks that a report read back has every field its readers rely on: a stored file edited by hand or written by
 * something else ({@code "headline": null}) must be refused when it is read, with the field named, not fail every
 * later read of its job with a NullPointerException. Walks the report's records, lists and maps, so a field added
 * later is checked without being listed here.
 */
final class ReportFields {
  /**
   * The fields a report may leave null, by their path with list indexes left out: a report with no stuck operation
   * (no hang, a log-only verdict) names no collective, and says so; {@code fabric} and {@code lateness} belong to
   * network and straggler verdicts only, and the JSON leaves them out when null.
   */
  private static final Set<String> MAY_BE_NULL = Set.of("collective", "fabric", "lateness");
  /** The lists whose elements may be null: a straggler's lateness in a time bucket where it joined no collective. */
  private static final Set<String> MAY_HOLD_NULL = Set.of("lateness.ranks.late_by_bucket_ns");
  /** Nesting deeper than any report has: a document built to exhaust the stack is refused, not followed. */
  private static final int MAX_DEPTH = 32;
  private static final PropertyNamingStrategies.NamingBase JSON_NAMES =
      (PropertyNamingStrategies.NamingBase) PropertyNamingStrategies.SNAKE_CASE;

  private ReportFields() {}

  /**
   * @throws IllegalArgumentException naming the first field that is missing or null, as the JSON spells it
   *     ({@code "culprits[0].host"})
   */
  static void check(Report report) {
    value(report, "", "", false, 0);
  }

  private static void value(Object value, String path, String shape, boolean nullable, int depth) {
    if (value == null) {
      if (!nullable && !MAY_BE_NULL.contains(shape)) {
        throw new IllegalArgumentException("not a frdiag report: field " + path + " is missing or null");
      }
      return;
    }
    if (depth > MAX_DEPTH) {
      throw new IllegalArgumentException("not a frdiag report: field " + path + " is nested too deep");
    }
    if (value instanceof Record r) {
      for (RecordComponent c : r.getClass().getRecordComponents()) {
        String name = JSON_NAMES.translate(c.getName());
        value(read(r, c), path.isEmpty() ? name : path + "." + name, shape.isEmpty() ? name : shape + "." + name,
            false, depth + 1);
      }
    } else if (value instanceof List<?> list) {
      for (int i = 0; i < list.size(); i++) {
        value(list.get(i), path + "[" + i + "]", shape, MAY_HOLD_NULL.contains(shape), depth + 1);
      }
    } else if (value instanceof Map<?, ?> map) {
      for (Map.Entry<?, ?> e : map.entrySet()) {
        value(e.getKey(), path + " key", shape + " key", false, depth + 1);
        value(e.getValue(), path + "." + e.getKey(), shape + ".*", false, depth + 1);
      }
    }
  }

  private static Object read(Record r, RecordComponent c) {
    try {
      return c.getAccessor().invoke(r);
    } catch (IllegalAccessException | InvocationTargetException e) {
      throw new IllegalStateException("cannot read " + c.getName() + " of " + r.getClass().getSimpleName(), e);
    }
  }
}
