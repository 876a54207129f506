package dev.frdiag.testing.sim;

import java.util.Arrays;
import java.util.Objects;

/**
 * A process group of the simulated job: the name and description every member registers it under, and its
 * members' global ranks in group-rank order.
 */
public record ProcessGroupSpec(String name, String desc, int[] ranks) {

  /**
   * @throws IllegalArgumentException if the name is empty or there are no members
   */
  public ProcessGroupSpec {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(desc, "desc");
    Objects.requireNonNull(ranks, "ranks");
    if (name.isEmpty()) {
      throw new IllegalArgumentException("process group name must not be empty");
    }
    if (ranks.length == 0) {
      throw new IllegalArgumentException("process group '" + name + "' has no members");
    }
    ranks = ranks.clone();
  }

  /** Global ranks of the members in group-rank order (a copy). */
  @Override
  public int[] ranks() {
    return ranks.clone();
  }

  /** The members without a copy, for the simulator's own setup; never modified. */
  int[] members() {
    return ranks;
  }

  public int size() {
    return ranks.length;
  }

  /** True when {@code globalRank} is a member. */
  public boolean contains(int globalRank) {
    for (int r : ranks) {
      if (r == globalRank) {
        return true;
      }
    }
    return false;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ProcessGroupSpec other && name.equals(other.name) && desc.equals(other.desc)
        && Arrays.equals(ranks, other.ranks);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, desc, Arrays.hashCode(ranks));
  }

  @Override
  public String toString() {
    if (ranks.length <= 16) {
      return name + Arrays.toString(ranks);
    }
    // The world group of a large job would otherwise print thousands of ranks.
    return name + "[" + ranks[0] + ", " + ranks[1] + ", ... " + ranks[ranks.length - 1] + "] (" + ranks.length
        + " ranks)";
  }
}
