package dev.frdiag.analysis;

import dev.frdiag.proto.v1.ProcessGroup;

/**
 * A process group's identity across ranks: its name and its member set (names can be reused by split groups).
 * The member set is represented by its comms_id layout (start, stride, size), which identifies it exactly and
 * hashes in constant time even for a 16,384-rank world group.
 */
record GroupKey(String name, long start, long stride, long size) implements Comparable<GroupKey> {
  static GroupKey of(ProcessGroup g) {
    return new GroupKey(g.getName(), g.getGlobalRankStart(), g.getGlobalRankStride(), g.getRanksCount());
  }

  // equals and hashCode written out: a record's generated ones are method-handle chains, spun at first
  // use and slow until the optimizing compiler, which fr-diagnose leaves out (docs/PERFORMANCE.md).
  @Override
  public boolean equals(Object o) {
    return o instanceof GroupKey k && start == k.start && stride == k.stride && size == k.size
        && name.equals(k.name);
  }

  @Override
  public int hashCode() {
    return ((name.hashCode() * 31 + Long.hashCode(start)) * 31 + Long.hashCode(stride)) * 31 + Long.hashCode(size);
  }

  @Override
  public int compareTo(GroupKey o) {
    int c = name.compareTo(o.name);
    if (c == 0) {
      c = Long.compare(size, o.size);
    }
    if (c == 0) {
      c = Long.compare(start, o.start);
    }
    return c == 0 ? Long.compare(stride, o.stride) : c;
  }
}
