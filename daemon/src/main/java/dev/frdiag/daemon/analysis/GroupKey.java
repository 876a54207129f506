package dev.frdiag.daemon.analysis;

import dev.frdiag.proto.v1.ProcessGroup;
import java.util.List;

/**
 * A process group's identity across ranks: its name and its member set (names can be reused by split groups).
 *
 * @param name the group name
 * @param members sorted global ranks
 */
record GroupKey(String name, List<Integer> members) implements Comparable<GroupKey> {
  static GroupKey of(ProcessGroup g) {
    return new GroupKey(g.getName(), g.getRanksList().stream().sorted().toList());
  }

  @Override
  public int compareTo(GroupKey o) {
    int c = name.compareTo(o.name);
    if (c != 0) {
      return c;
    }
    c = Integer.compare(members.size(), o.members.size());
    for (int i = 0; c == 0 && i < members.size(); i++) {
      c = Integer.compare(members.get(i), o.members.get(i));
    }
    return c;
  }
}
