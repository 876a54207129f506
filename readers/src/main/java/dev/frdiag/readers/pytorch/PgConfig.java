package dev.frdiag.readers.pytorch;

import static dev.frdiag.readers.pytorch.DumpValues.abbreviate;
import static dev.frdiag.readers.pytorch.DumpValues.describe;
import static dev.frdiag.readers.pytorch.DumpValues.dict;
import static dev.frdiag.readers.pytorch.DumpValues.integer;
import static dev.frdiag.readers.pytorch.DumpValues.isDigits;
import static dev.frdiag.readers.pytorch.DumpValues.keyText;
import static dev.frdiag.readers.pytorch.DumpValues.quoted;
import static dev.frdiag.readers.pytorch.DumpValues.string;

import dev.frdiag.proto.CommsId;
import dev.frdiag.readers.pytorch.DumpValues.At;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A dump's {@code pg_config}: the process groups it lists, by name in file order, with their members and the
 * rank layout their comms ids are made from. Groups that list no members, or have no name, are left out with a
 * warning.
 */
final class PgConfig {
  // Set.of(...).contains(null) throws: check that a key is a String before looking it up.
  private static final Set<String> GROUP_KEYS = Set.of("name", "desc", "ranks");

  /** A pg_config entry. */
  record Group(String name, String desc, int[] ranks, CommsId.GroupLayout layout, long commsIdPrefix) {
    /** This group's rank of {@code globalRank}, or -1 when it is not a member. */
    int groupRankOf(int globalRank) {
      for (int i = 0; i < ranks.length; i++) {
        if (ranks[i] == globalRank) {
          return i;
        }
      }
      return -1;
    }
  }

  private final Map<String, Group> groups = new LinkedHashMap<>();
  private final ValueBudget budget;
  private final DumpWarnings warnings;

  private PgConfig(ValueBudget budget, DumpWarnings warnings) {
    this.budget = budget;
    this.warnings = warnings;
  }

  /**
   * @param value the value of the dump's 'pg_config' key
   * @param rank the rank the dump is from, to warn when it is not a member of a group its dump lists
   * @throws DumpProblem describing the first problem
   */
  static PgConfig read(Object value, int rank, ValueBudget budget, DumpWarnings warnings) {
    PgConfig config = new PgConfig(budget, warnings);
    config.readGroups(value, rank);
    return config;
  }

  /** The group named {@code name}, or null. */
  Group group(String name) {
    return groups.get(name);
  }

  /** The groups, in file order. */
  Collection<Group> groups() {
    return groups.values();
  }

  /** The names of the groups, in file order. */
  List<String> names() {
    return new ArrayList<>(groups.keySet());
  }

  private void readGroups(Object value, int rank) {
    Map<?, ?> config = dict(value, "'pg_config'");
    budget.spend(config.size());
    List<String> notMember = new ArrayList<>();
    for (Map.Entry<?, ?> e : config.entrySet()) {
      if (!(e.getKey() instanceof String key)) {
        throw new DumpProblem("'pg_config' has a key that is " + describe(e.getKey()) + ", expected a string");
      }
      Object where = new At("pg_config", abbreviate(key));
      Map<?, ?> g = dict(e.getValue(), where);
      budget.spend(g.size());
      String name = g.containsKey("name") ? string(g.get("name"), new At(where, "name")) : key;
      if (!name.equals(key)) {
        warnings.add(where + " is named '" + abbreviate(name) + "'; the key is used");
        name = key;
      }
      String desc = g.containsKey("desc") ? string(g.get("desc"), new At(where, "desc")) : "";
      if (!g.containsKey("ranks")) {
        throw new DumpProblem(where + ": missing key 'ranks'");
      }
      for (Object k : g.keySet()) {
        if (!(k instanceof String) || !GROUP_KEYS.contains(k)) {
          warnings.add("pg_config: unknown key " + keyText(k) + " ignored");
        }
      }
      int[] ranks = ranks(g.get("ranks"), where);
      if (name.isEmpty()) {
        // PyTorch names every group it records on ('0' the default, then '1', ...); gloo (2.13) writes one unnamed
        // entry beside them, with the world's ranks or none, which no record names.
        warnings.add(where + " has no name, so no record is on it: it is left out");
        continue;
      }
      if (ranks.length == 0) {
        warnings.add(where + " lists no members; records on it get no peer and no comms_id");
        continue;
      }
      CommsId.GroupLayout layout;
      try {
        layout = CommsId.layoutOf(ranks);
      } catch (IllegalArgumentException ex) {
        throw new DumpProblem(where + ": " + ex.getMessage());
      }
      Group group = new Group(name, desc, ranks, layout, CommsId.namePrefix(name));
      if (group.groupRankOf(rank) < 0) {
        notMember.add(name);
      }
      groups.put(name, group);
    }
    if (!notMember.isEmpty()) {
      warnings.add("rank " + rank + " is not a member of process group" + (notMember.size() > 1 ? "s " : " ")
          + quoted(notMember) + " that its dump lists: is the file name right?");
    }
  }

  /** Parses "[0, 1, 2]" (PyTorch) or "[0,1,2]" (other writers); a list of ints is accepted too. */
  private int[] ranks(Object value, Object where) {
    if (value instanceof List<?> list) {
      budget.spend(list.size());
      int[] out = new int[list.size()];
      for (int i = 0; i < out.length; i++) {
        long r = integer(list.get(i), new At(new At(where, "ranks"), i));
        if (r < 0 || r > Integer.MAX_VALUE) {
          throw new DumpProblem(where + ": rank " + r + " is out of range");
        }
        out[i] = (int) r;
      }
      return out;
    }
    String text = string(value, new At(where, "ranks")).strip();
    if (text.length() < 2 || text.charAt(0) != '[' || text.charAt(text.length() - 1) != ']') {
      throw badRanks(where, text);
    }
    String inner = text.substring(1, text.length() - 1).strip();
    if (inner.isEmpty()) {
      return new int[0];
    }
    String[] parts = inner.split(",", -1);
    budget.spend(parts.length);
    int[] out = new int[parts.length];
    for (int i = 0; i < parts.length; i++) {
      String p = parts[i].strip();
      if (p.length() > 9 || !isDigits(p)) {
        throw badRanks(where, text);
      }
      out[i] = Integer.parseInt(p);
    }
    return out;
  }

  private static DumpProblem badRanks(Object where, String text) {
    return new DumpProblem(where + ": 'ranks' is '" + abbreviate(text)
        + "', expected a list of global ranks such as '[0, 1, 2]'");
  }
}
