package dev.frdiag.analysis;

import dev.frdiag.proto.v1.ProcessGroup;
import java.util.AbstractList;
import java.util.Arrays;
import java.util.RandomAccess;

/**
 * A group's members, sorted, four bytes each: a group of 900,000 members held as boxed integers took 20 bytes a
 * member, five times what the daemon keeps of it, and an analysis of a job whose groups filled its share of the
 * daemon's heap ran out of memory in sorting them. Immutable.
 */
final class GroupMembers extends AbstractList<Integer> implements RandomAccess {
  private final int[] sorted;

  private GroupMembers(int[] sorted) {
    this.sorted = sorted;
  }

  /** The members {@code g} lists, sorted. */
  static GroupMembers of(ProcessGroup g) {
    int[] ranks = new int[g.getRanksCount()];
    for (int i = 0; i < ranks.length; i++) {
      ranks[i] = g.getRanks(i);
    }
    Arrays.sort(ranks);
    return new GroupMembers(ranks);
  }

  @Override
  public Integer get(int index) {
    return sorted[index];
  }

  @Override
  public int size() {
    return sorted.length;
  }

  @Override
  public boolean contains(Object o) {
    return o instanceof Integer rank && Arrays.binarySearch(sorted, rank) >= 0;
  }

  @Override
  public int indexOf(Object o) {
    if (!(o instanceof Integer rank)) {
      return -1;
    }
    int i = Arrays.binarySearch(sorted, rank);
    // The first of equal members, as a list's indexOf answers.
    while (i > 0 && sorted[i - 1] == rank) {
      i--;
    }
    return Math.max(i, -1);
  }
}
