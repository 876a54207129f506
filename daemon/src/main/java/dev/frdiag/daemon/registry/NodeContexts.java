package dev.frdiag.daemon.registry;

import dev.frdiag.proto.v1.NodeContext;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the nodes of one job posted about their NCCL logs and counters, the newest post of each node, bounded in bytes.
 * Not thread-safe: its owner's lock guards it.
 */
final class NodeContexts {
  /** How a refusal names these contexts: "node context of job j1". */
  private final String what;
  private final long maxBytes;
  /** Where the heap these posts take is counted ({@link StateBytes#context}). */
  private final StateBudget.Share share;
  private final Map<String, NodeContext> byHost = new TreeMap<>();
  private long bytes;

  NodeContexts(String what, long maxBytes, StateBudget.Share share) {
    this.what = what;
    this.maxBytes = maxBytes;
    this.share = share;
  }

  /**
   * Keeps {@code node}'s post in place of its earlier one.
   *
   * @throws LimitExceededException when the posts would exceed the byte limit, or the heap they take the limit of
   *     their share of the daemon's state budget
   */
  void put(NodeContext node) {
    NodeContext before = byHost.get(node.getHostname());
    long after = bytes - (before == null ? 0 : before.getSerializedSize()) + node.getSerializedSize();
    if (after > maxBytes) {
      share.countRefusal(StateBudget.State.CONTEXT);
      throw new LimitExceededException(what + " would reach " + after + " bytes, more than its limit of " + maxBytes);
    }
    long growth = StateBytes.context(node) - (before == null ? 0 : StateBytes.context(before));
    share.reserve(StateBudget.State.CONTEXT, growth);
    byHost.put(node.getHostname(), node);
    bytes = after;
  }

  /** Gives back what the posts hold to the share they were counted in. */
  void release() {
    share.add(-byHost.values().stream().mapToLong(StateBytes::context).sum());
    byHost.clear();
    bytes = 0;
  }

  /** The posts, by host name. */
  List<NodeContext> all() {
    return List.copyOf(byHost.values());
  }
}
