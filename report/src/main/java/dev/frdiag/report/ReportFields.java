package dev.frdiag.report;

import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
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
   * network and straggler verdicts only, {@code recovered_at} to hangs that ended by itself, and the JSON leaves them
   * out when null.
   */
  private static final Set<String> MAY_BE_NULL = Set.of("collective", "fabric", "lateness", "recovered_at");
  /** The lists whose elements may be null: a straggler's lateness in a time bucket where it joined no collective. */
  private static final Set<String> MAY_HOLD_NULL = Set.of("lateness.ranks.late_by_bucket_ns");
  /** Nesting deeper than any report has: a document built to exhaust the stack is refused, not followed. */
  private static final int MAX_DEPTH = 32;
  private static final PropertyNamingStrategies.NamingBase JSON_NAMES =
      (PropertyNamingStrategies.NamingBase) PropertyNamingStrategies.SNAKE_CASE;

  /** A record type's component as the check walks it: its accessor and its JSON name. */
  private record Component(Method accessor, String name) {}

  private static final ClassValue<List<Component>> COMPONENTS = new ClassValue<>() {
    @Override
    protected List<Component> computeValue(Class<?> type) {
      List<Component> components = new ArrayList<>();
      for (RecordComponent c : type.getRecordComponents()) {
        components.add(new Component(c.getAccessor(), JSON_NAMES.translate(c.getName())));
      }
      return List.copyOf(components);
    }
  };

  private ReportFields() {}

  /**
   * Where a value sits in the document. Spelled out only for a value that is refused or null: a report holds
   * thousands of values, and building each one's path as text took longer than reading the report.
   *
   * @param name a field's JSON name; null for a list element, a map key or a map value
   * @param index a list element's index, or -1
   * @param key a map entry's key, for a value and (with {@code name} null and {@code index} -2) a key
   */
  private record Where(Where parent, String name, int index, Object key) {
    static final Where ROOT = new Where(null, null, -1, null);

    Where field(String n) {
      return new Where(this, n, -1, null);
    }

    Where element(int i) {
      return new Where(this, null, i, null);
    }

    Where mapKey() {
      return new Where(this, null, -2, null);
    }

    Where mapValue(Object k) {
      return new Where(this, null, -1, k);
    }

    /** "culprits[0].host". */
    String path() {
      return render(true);
    }

    /** The path with list indexes left out and map values as {@code *}: "culprits.host". */
    String shape() {
      return render(false);
    }

    private String render(boolean exact) {
      if (parent == null) {
        return "";
      }
      String up = parent.render(exact);
      if (name != null) {
        return up.isEmpty() ? name : up + "." + name;
      }
      if (index >= 0) {
        return exact ? up + "[" + index + "]" : up;
      }
      return index == -2 ? up + " key" : up + "." + (exact ? key : "*");
    }
  }

  /**
   * @throws IllegalArgumentException naming the first field that is missing or null, as the JSON spells it
   *     ({@code "culprits[0].host"})
   */
  static void check(Report report) {
    value(report, Where.ROOT, false, 0);
  }

  private static void value(Object value, Where where, boolean nullable, int depth) {
    if (value == null) {
      if (!nullable && !MAY_BE_NULL.contains(where.shape())) {
        throw new IllegalArgumentException("not a frdiag report: field " + where.path() + " is missing or null");
      }
      return;
    }
    if (depth > MAX_DEPTH) {
      throw new IllegalArgumentException("not a frdiag report: field " + where.path() + " is nested too deep");
    }
    if (value instanceof Record r) {
      for (Component c : COMPONENTS.get(r.getClass())) {
        value(read(r, c.accessor()), where.field(c.name()), false, depth + 1);
      }
    } else if (value instanceof List<?> list) {
      for (int i = 0; i < list.size(); i++) {
        Object element = list.get(i);
        value(element, where.element(i), element == null && MAY_HOLD_NULL.contains(where.shape()), depth + 1);
      }
    } else if (value instanceof Map<?, ?> map) {
      for (Map.Entry<?, ?> e : map.entrySet()) {
        value(e.getKey(), where.mapKey(), false, depth + 1);
        value(e.getValue(), where.mapValue(e.getKey()), false, depth + 1);
      }
    }
  }

  private static Object read(Record r, Method accessor) {
    try {
      return accessor.invoke(r);
    } catch (IllegalAccessException | InvocationTargetException e) {
      throw new IllegalStateException("cannot read " + accessor.getName() + " of " + r.getClass().getSimpleName(),
          e);
    }
  }
}
