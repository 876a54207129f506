package dev.frdiag.analysis;

import java.util.List;

/**
 * One collective that has outstanding work and no progress, with where each member is.
 *
 * @param collective the operation
 * @param rootCause true when its blockage is explained by its own members (a culprit, a mismatch, or the
 *     fabric); false when it only waits on ranks that are stuck in another collective (a consequence)
 * @param completed members whose device finished it
 * @param waiting members whose device started it and waits
 * @param issued members that issued it but whose device never started it (or start is not recorded)
 * @param notIssued members that never issued it
 * @param unknown members with no usable evidence (lost, or no snapshot)
 * @param blockedBy for a consequence: labels of the collectives its missing members are stuck in
 */
public record StuckCollective(CollectiveRef collective, boolean rootCause, List<Integer> completed,
    List<Integer> waiting, List<Integer> issued, List<Integer> notIssued, List<Integer> unknown,
    List<String> blockedBy) {}
