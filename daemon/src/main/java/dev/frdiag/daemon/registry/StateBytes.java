package dev.frdiag.daemon.registry;

import com.google.protobuf.MessageLite;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;

/**
 * What each thing a client makes the daemon hold costs in heap, as {@link StateBudget} counts it: estimates on the
 * high side of what a 64-bit JVM with compressed pointers retains (object headers, the maps that hold them, strings
 * at two bytes a character), checked against measured retained sizes by {@code StateBytesTest}. A rank and a group
 * also count what an analysis of their job builds for each (its index entries), so that a job at its limit can
 * still be analysed.
 */
final class StateBytes {
  /** A rank's state with its maps still empty, its entry in the job's map of ranks, and its analysis index. */
  static final long RANK = 2048;
  /** A group's entry in one rank's map of its groups (the group itself is the job's one copy). */
  static final long GROUP_ENTRY = 64;
  /** One slot of a rank's window: its numbers in columns, and the record built from them when an incident reads it. */
  static final long WINDOW_SLOT = 320;

  private StateBytes() {}

  /**
   * The job's one copy of a process group (its members at four bytes each, with room for the list to have grown,
   * its name and description), and the analysis's key, entry and sorted copy of its members.
   */
  static long group(ProcessGroup g) {
    return 1024 + 2L * (g.getName().length() + g.getDesc().length()) + 12L * g.getRanksCount();
  }

  /** A rank's newest progress on one group, in the three maps that keep it by group name. */
  static long progress(String group) {
    return 320 + 2L * group.length();
  }

  /** A message kept as parsed (an identity, an event, a frame): its object, and its strings with theirs. */
  static long message(MessageLite m) {
    return 128 + 2L * m.getSerializedSize();
  }

  /**
   * A node's post: its text, and an object with up to six strings for each finding and NIC binding however short
   * their text (a thousand one-letter findings hold some 300 KB for 10 KB on the wire).
   */
  static long context(NodeContext node) {
    return message(node) + 320L * (node.getFindingsCount() + node.getNicsCount());
  }

  /** A rank's entry for a frame id whose frame the job already holds. */
  static final long FRAME_ENTRY = 64;
}
