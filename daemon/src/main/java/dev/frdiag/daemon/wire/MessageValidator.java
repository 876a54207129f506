package dev.frdiag.daemon.wire;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.Contract;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import java.util.List;
import java.util.function.Predicate;

/**
 * Checks what a rank sends before the daemon believes it. Every check names the field and the value, since the
 * message ends up in the rank's log as the stream's error status.
 */
final class MessageValidator {
  static final int MAX_WORLD_SIZE = 1 << 20;
  static final int MAX_GROUPS = 4096;
  static final int MAX_SCHEDULER_ENTRIES = 16;
  static final int MAX_SCHEDULER_KEY_CHARS = 64;
  static final int MAX_SCHEDULER_VALUE_CHARS = 256;

  private MessageValidator() {}

  /** @throws IllegalArgumentException describing the first problem */
  static void hello(Hello hello) {
    hello(hello, g -> false);
  }

  /**
   * @param checkedBefore whether a group equal to this one passed these checks on its job before
   * @throws IllegalArgumentException describing the first problem
   */
  static void hello(Hello hello, Predicate<ProcessGroup> checkedBefore) {
    if (!hello.hasIdentity()) {
      throw new IllegalArgumentException("Hello has no identity");
    }
    RankIdentity id = hello.getIdentity();
    if (!Contract.JOB_ID.matcher(id.getJobId()).matches()) {
      throw new IllegalArgumentException("invalid job_id '" + abbreviate(id.getJobId())
          + "': " + Contract.JOB_ID_RULE);
    }
    if (id.getWorldSize() < 1 || id.getWorldSize() > MAX_WORLD_SIZE) {
      throw new IllegalArgumentException("world_size " + id.getWorldSize() + " is outside 1.." + MAX_WORLD_SIZE);
    }
    if (id.getGlobalRank() < 0 || id.getGlobalRank() >= id.getWorldSize()) {
      throw new IllegalArgumentException("global_rank " + id.getGlobalRank() + " is outside 0.."
          + (id.getWorldSize() - 1));
    }
    groups(hello.getProcessGroupsList(), id, checkedBefore);
    if (hello.getSchedulerCount() > MAX_SCHEDULER_ENTRIES) {
      throw new IllegalArgumentException("scheduler has " + hello.getSchedulerCount() + " entries, more than "
          + MAX_SCHEDULER_ENTRIES);
    }
    hello.getSchedulerMap().forEach((key, value) -> {
      if (key.isEmpty() || key.length() > MAX_SCHEDULER_KEY_CHARS) {
        throw new IllegalArgumentException("scheduler key '" + abbreviate(key) + "' must be 1-"
            + MAX_SCHEDULER_KEY_CHARS + " characters");
      }
      if (value.length() > MAX_SCHEDULER_VALUE_CHARS) {
        throw new IllegalArgumentException("scheduler value of '" + key + "' is longer than "
            + MAX_SCHEDULER_VALUE_CHARS + " characters");
      }
    });
  }

  /** @throws IllegalArgumentException when the event says nothing the daemon can act on */
  static void event(RankEvent event) {
    if (event.getKind() == RankEvent.Kind.KIND_UNSPECIFIED || event.getKind() == RankEvent.Kind.UNRECOGNIZED) {
      throw new IllegalArgumentException("rank event kind " + (event.getKind() == RankEvent.Kind.UNRECOGNIZED
          ? event.getKindValue() + " is unknown" : "is not set")
          + ": use WATCHDOG_TIMEOUT, COMM_ERROR, CUDA_ERROR or WATCHDOG_STUCK");
    }
  }

  /** @throws IllegalArgumentException when a reply says its records are on the stream and carries records too */
  static void dumpReply(DumpReply reply) {
    if (reply.getRecordsOnStream() && (reply.getRecordsCount() > 0 || reply.getTemplatesCount() > 0)) {
      throw new IllegalArgumentException("dump reply " + reply.getRequestId() + " says its records are on the "
          + "stream (records_on_stream) but carries " + reply.getRecordsCount() + " records and "
          + reply.getTemplatesCount() + " templates: send one or the other");
    }
  }

  static void groups(List<ProcessGroup> groups, RankIdentity id) {
    groups(groups, id, g -> false);
  }

  /**
   * Checks each group's members, layout and that {@code id}'s rank is one of them. A group equal to one that
   * passed before on the same job, with members in arithmetic progression, is checked in constant time: every rank
   * of a 16,384-rank job announces the same 16,384-member world group, and sorting it for each Hello was a fifth
   * of the daemon's time while a job reconnected.
   */
  static void groups(List<ProcessGroup> groups, RankIdentity id, Predicate<ProcessGroup> checkedBefore) {
    if (groups.size() > MAX_GROUPS) {
      throw new IllegalArgumentException(groups.size() + " process groups is more than " + MAX_GROUPS);
    }
    for (ProcessGroup g : groups) {
      if (g.getGlobalRankStride() > 0 && checkedBefore.test(g)) {
        progression(g, id);
        continue;
      }
      if (g.getName().isEmpty()) {
        throw new IllegalArgumentException("a process group has an empty name");
      }
      if (g.getRanksCount() == 0) {
        throw new IllegalArgumentException("process group '" + g.getName() + "' has no members");
      }
      int[] ranks = g.getRanksList().stream().mapToInt(Integer::intValue).toArray();
      for (int r : ranks) {
        if (r < 0 || r >= id.getWorldSize()) {
          throw new IllegalArgumentException("process group '" + g.getName() + "' has member " + r
              + " outside world size " + id.getWorldSize());
        }
      }
      CommsId.GroupLayout layout;
      try {
        layout = CommsId.layoutOf(ranks);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("process group '" + g.getName() + "': " + e.getMessage(), e);
      }
      if (layout.start() != g.getGlobalRankStart() || layout.stride() != g.getGlobalRankStride()) {
        throw new IllegalArgumentException("process group '" + g.getName() + "' says start/stride "
            + g.getGlobalRankStart() + "/" + g.getGlobalRankStride() + " but its members give "
            + layout.start() + "/" + layout.stride());
      }
      if (!g.getRanksList().contains(id.getGlobalRank())) {
        throw new IllegalArgumentException("rank " + id.getGlobalRank() + " is not a member of process group '"
            + g.getName() + "' it announced");
      }
    }
  }

  /** The checks of {@link #groups} for a group known to be start, start + stride, ... with no duplicate. */
  private static void progression(ProcessGroup g, RankIdentity id) {
    long start = g.getGlobalRankStart();
    long stride = g.getGlobalRankStride();
    long last = start + stride * (g.getRanksCount() - 1);
    if (last >= id.getWorldSize()) {
      throw new IllegalArgumentException("process group '" + g.getName() + "' has member " + last
          + " outside world size " + id.getWorldSize());
    }
    long rank = id.getGlobalRank();
    if (rank < start || rank > last || (rank - start) % stride != 0) {
      throw new IllegalArgumentException("rank " + id.getGlobalRank() + " is not a member of process group '"
          + g.getName() + "' it announced");
    }
  }

  static final int MAX_FINDINGS = 1000;
  /** A node has a few dozen GPUs and NIC ports at most; more is a broken or hostile agent. */
  static final int MAX_BINDINGS = 1024;

  /** @throws IllegalArgumentException describing the first problem */
  static void context(NodeContext node) {
    if (!Contract.JOB_ID.matcher(node.getJobId()).matches()) {
      throw new IllegalArgumentException("invalid job_id '" + abbreviate(node.getJobId()) + "'");
    }
    if (node.getHostname().isEmpty() || node.getHostname().length() > 255) {
      throw new IllegalArgumentException("hostname must be 1-255 characters");
    }
    if (node.getFindingsCount() > MAX_FINDINGS) {
      throw new IllegalArgumentException(node.getFindingsCount() + " findings is more than " + MAX_FINDINGS);
    }
    if (node.getNicsCount() > MAX_BINDINGS) {
      throw new IllegalArgumentException(node.getNicsCount() + " NIC bindings is more than " + MAX_BINDINGS);
    }
    if (node.getRanksCount() > MAX_BINDINGS) {
      throw new IllegalArgumentException(node.getRanksCount() + " ranks on one node is more than " + MAX_BINDINGS);
    }
  }

  static String abbreviate(String s) {
    return s.length() <= 64 ? s : s.substring(0, 64) + "…";
  }
}
