package dev.frdiag.readers.pytorch;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * What the decoder noticed in one dump but could read past. Each warning is kept once, in the order first seen;
 * past {@link #MAX} distinct ones only a count is kept, so a dump with the same oddity in every entry gives a short
 * list. Not thread-safe.
 */
final class DumpWarnings {
  static final int MAX = 50;

  private final Set<String> warnings = new LinkedHashSet<>();
  private int dropped;

  void add(String warning) {
    if (warnings.size() < MAX || warnings.contains(warning)) {
      warnings.add(warning);
    } else {
      dropped++;
    }
  }

  /** The warnings, then one line counting those left out. */
  List<String> toList() {
    List<String> out = new ArrayList<>(warnings);
    if (dropped > 0) {
      out.add("… and " + dropped + " more warnings");
    }
    return out;
  }
}
