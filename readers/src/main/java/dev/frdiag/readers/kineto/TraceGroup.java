package dev.frdiag.readers.kineto;

import java.util.List;
import java.util.Objects;

/**
 * A process group as a trace names it: on a collective's arguments ({@code Process Group Name}, {@code Process Group
 * Description}, {@code Process Group Ranks}) or in {@code distributedInfo.pg_config}.
 *
 * @param name the group's name ("0" for the default group); empty when the trace does not say (a collective known
 *     only by its kernel's name)
 * @param desc its description ("default_pg"); empty when unknown
 * @param ranks its members' global ranks; empty when unknown (PyTorch cuts long lists short: then the ones given)
 */
public record TraceGroup(String name, String desc, List<Integer> ranks) {
  /** The group of collectives whose group the trace does not name. */
  public static final TraceGroup UNNAMED = new TraceGroup("", "", List.of());

  public TraceGroup {
    Objects.requireNonNull(name, "name");
    desc = desc == null ? "" : desc;
    ranks = List.copyOf(ranks);
  }

  /** Whether the trace named this group. */
  public boolean named() {
    return !name.isEmpty();
  }
}
