package dev.frdiag.collector.recorder;

import dev.frdiag.proto.CommsId;
import java.util.Arrays;

/**
 * A process group registered with a {@link FlightRecorder}, holding its sequence counters and progress.
 *
 * <p>Sequence counters follow PyTorch: {@code collective_seq} advances once per collective (once per coalesced
 * group), {@code p2p_seq} once per P2P op and {@code op_id} once per op. Like PyTorch, which issues a group's
 * ops under that group's lock, one thread at a time issues ops on a group.
 */
public final class ProcessGroupHandle {
  final int id;
  private final String name;
  private final String desc;
  private final int[] ranks;
  final CommsId.GroupLayout layout;

  long collectiveSeq;
  long p2pSeq;
  long opId;
  /** Non-zero while a coalesced group is open: the seq its members share. */
  long coalescedSeq;
  /** Whether the open coalesced group batches sends/recvs (shares a p2p_seq) rather than collectives. */
  boolean coalescedP2p;

  // Progress read by the reporter thread; -1 = none yet.
  volatile long lastEnqueuedSeq = -1;
  volatile long lastStartedSeq = -1;
  volatile long lastCompletedSeq = -1;
  volatile long lastEnqueuedP2pSeq = -1;
  volatile long lastCompletedP2pSeq = -1;
  volatile long lastProgressNs;

  ProcessGroupHandle(int id, String name, String desc, int[] ranks) {
    this.id = id;
    this.name = name;
    this.desc = desc;
    this.ranks = ranks;
    this.layout = CommsId.layoutOf(ranks);
  }

  public String name() {
    return name;
  }

  public String desc() {
    return desc;
  }

  /** Global ranks of the members in group-rank order (a copy). */
  public int[] ranks() {
    return ranks.clone();
  }

  public int size() {
    return ranks.length;
  }

  /** Position of {@code globalRank} in the group, or -1. */
  public int groupRankOf(int globalRank) {
    for (int i = 0; i < ranks.length; i++) {
      if (ranks[i] == globalRank) {
        return i;
      }
    }
    return -1;
  }

  @Override
  public String toString() {
    return name + Arrays.toString(ranks);
  }
}
