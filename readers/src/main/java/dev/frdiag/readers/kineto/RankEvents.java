package dev.frdiag.readers.kineto;

import static dev.frdiag.readers.kineto.KinetoTraceReader.family;
import static dev.frdiag.readers.kineto.KinetoTraceReader.isP2p;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What one rank's events in a profiler trace gave as the file was read (times relative, as the base may come last
 * in the file), and the collectives they make once it is read: {@link KinetoTraceReader} fills it event by event,
 * then asks it for its {@link #collectives}.
 */
final class RankEvents {
  /** gloo's worker threads per process group (ProcessGroupGloo::Options, threads = 2 by default). */
  static final int GLOO_THREADS_PER_GROUP = 2;

  final Map<Long, CpuOp> paramComms = new HashMap<>();
  final List<CpuOp> paramCommsInOrder = new ArrayList<>();
  final List<Kernel> commKernels = new ArrayList<>();
  final Spans compute = new Spans();
  final Spans communication = new Spans();
  final List<CpuOp> glooWork = new ArrayList<>();
  final List<CpuOp> c10dOps = new ArrayList<>();
  final Set<Long> issuingThreads = new HashSet<>();
  final List<CpuOp> ncclAnnotations = new ArrayList<>();

  /** A communication kernel as it arrived; linked to its CPU op at the end of the file. */
  record Kernel(long extId, String name, long startNs, long endNs, Keys keys) {}

  /** The collective keys an event's arguments carry. */
  record Keys(String op, TraceGroup group, long seq, long commsId, boolean hasCommsId, String dtype,
      long elements) {}

  /** A CPU-side operation: a {@code record_param_comms} awaiting its kernels, or an annotation. */
  static final class CpuOp {
    final long tsNs;
    final long tid;
    final long durNs;
    final String name;
    final Keys keys;
    long startNs;
    long endNs;
    boolean claimed;

    CpuOp(long tsNs, long durNs, long tid, String name, Keys keys) {
      this.tsNs = tsNs;
      this.durNs = durNs;
      this.tid = tid;
      this.name = name;
      this.keys = keys;
    }
  }

  boolean isEmpty() {
    return paramComms.isEmpty() && commKernels.isEmpty() && glooWork.isEmpty() && ncclAnnotations.isEmpty()
        && c10dOps.isEmpty();
  }

  /**
   * The collectives these events make, in time order (relative ns): kernels linked to their
   * {@code record_param_comms} ops by External id, kernels alone, else gloo's work, else {@code nccl:*}
   * annotations.
   *
   * @param pgConfig the file's process groups, empty when its distributedInfo is not this rank's
   * @param groups the file's groups by name, desc and members, which gloo's collectives are added to
   * @param notes the file's notes, which say why gloo's work is left out when it is
   */
  List<TraceCollective> collectives(List<KinetoTraceReader.PgConfig> pgConfig, Map<String, TraceGroup> groups,
      List<String> notes) {
    List<TraceCollective> collectives = new ArrayList<>();
    Set<CpuOp> linked = new HashSet<>();
    for (Kernel k : commKernels) {
      CpuOp op = k.extId() < 0 ? null : paramComms.get(k.extId());
      if (op != null) {
        op.startNs = op.startNs == 0 ? k.startNs() : Math.min(op.startNs, k.startNs());
        op.endNs = Math.max(op.endNs, k.endNs());
        linked.add(op);
      } else {
        collectives.add(fromKernel(k));
      }
    }
    for (CpuOp op : paramCommsInOrder) {
      Keys k = op.keys;
      collectives.add(new TraceCollective(k.group(), k.seq(), k.commsId(), k.hasCommsId(), isP2p(k.op()), k.op(),
          k.dtype(), k.elements(), op.tsNs, op.startNs, op.endNs, TraceCollective.Found.RECORD_PARAM_COMMS));
    }
    if (collectives.isEmpty() && !glooWork.isEmpty()) {
      collectives.addAll(glooCollectives(pgConfig, groups, notes));
    }
    if (collectives.isEmpty()) {
      for (CpuOp a : ncclAnnotations) {
        String op = a.name.substring("nccl:".length());
        collectives.add(new TraceCollective(TraceGroup.UNNAMED, -1, 0, false, isP2p(op), op, "", 0, a.tsNs, 0,
            0, TraceCollective.Found.ANNOTATION));
      }
    }
    collectives.sort(Comparator.comparingLong(RankEvents::firstTime));
    return collectives;
  }

  private TraceCollective fromKernel(Kernel k) {
    Keys keys = k.keys();
    if (keys != null && !keys.op().isEmpty()) {
      return new TraceCollective(keys.group(), keys.seq(), keys.commsId(), keys.hasCommsId(), isP2p(keys.op()),
          keys.op(), keys.dtype(), keys.elements(), 0, k.startNs(), k.endNs(), TraceCollective.Found.KERNEL);
    }
    String op = CommKernels.op(k.name());
    return new TraceCollective(TraceGroup.UNNAMED, -1, 0, false, CommKernels.isP2p(op), op, "", 0, 0,
        k.startNs(), k.endNs(), TraceCollective.Found.KERNEL);
  }

  /**
   * gloo's collectives: each runs as a {@code gloo:<op>} annotation on a worker thread of its group's pool, and
   * the trace names no group. Every gloo group starts its pool of {@value #GLOO_THREADS_PER_GROUP} threads when
   * it is made, in the order of {@code pg_config}, so the threads, in the order the system numbered them, fall
   * into the groups' pools in that order. When the threads seen are not exactly that many (a pool idle for the
   * whole trace), which thread serves which group cannot be told and gloo's work is left out.
   */
  private List<TraceCollective> glooCollectives(List<KinetoTraceReader.PgConfig> pgConfig,
      Map<String, TraceGroup> groups, List<String> notes) {
    List<KinetoTraceReader.PgConfig> glooGroups = pgConfig.stream()
        .filter(g -> g.backend().isEmpty() || g.backend().contains("gloo")).toList();
    TreeSet<Long> workers = new TreeSet<>();
    for (CpuOp w : glooWork) {
      if (!issuingThreads.contains(w.tid)) {
        workers.add(w.tid);
      }
    }
    if (glooGroups.isEmpty() || workers.size() != GLOO_THREADS_PER_GROUP * glooGroups.size()) {
      notes.add("gloo's work runs on " + workers.size() + " worker threads for " + glooGroups.size()
          + " gloo groups in distributedInfo: which thread serves which group cannot be told, so gloo's "
          + "collectives are left out");
      return List.of();
    }
    Map<Long, KinetoTraceReader.PgConfig> groupOfThread = new HashMap<>();
    int i = 0;
    for (long tid : workers) {
      groupOfThread.put(tid, glooGroups.get(i++ / GLOO_THREADS_PER_GROUP));
    }
    Map<String, ArrayDeque<CpuOp>> issued = new HashMap<>();
    c10dOps.sort(Comparator.comparingLong(o -> o.tsNs));
    for (CpuOp op : c10dOps) {
      issued.computeIfAbsent(family(op.name.substring("c10d::".length())), k -> new ArrayDeque<>()).add(op);
    }
    List<CpuOp> work = new ArrayList<>(glooWork);
    work.sort(Comparator.comparingLong(o -> o.tsNs));
    List<TraceCollective> out = new ArrayList<>();
    for (CpuOp w : work) {
      KinetoTraceReader.PgConfig g = groupOfThread.get(w.tid);
      if (g == null) {
        // gloo's send/recv run on the calling thread and name no peer group: not joined.
        continue;
      }
      String op = w.name.substring("gloo:".length());
      long issuedAt = 0;
      // The op that enqueued this work: the oldest of its kind not yet matched, issued before the work began.
      ArrayDeque<CpuOp> queue = issued.get(family(op));
      if (queue != null && !queue.isEmpty() && queue.peekFirst().tsNs <= w.tsNs) {
        issuedAt = queue.pollFirst().tsNs;
      }
      TraceGroup group = groups.computeIfAbsent(g.name() + "\u0000" + g.desc() + "\u0000" + g.ranks(),
          k -> new TraceGroup(g.name(), g.desc(), g.ranks()));
      out.add(new TraceCollective(group, -1, 0, false, isP2p(op), op, "", 0, issuedAt, w.tsNs, w.tsNs + w.durNs,
          TraceCollective.Found.GLOO_WORK));
    }
    return out;
  }

  private static long firstTime(TraceCollective c) {
    return c.issuedNs() != 0 ? c.issuedNs() : c.startNs();
  }
}
