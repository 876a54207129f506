package dev.frdiag.analysis;

import java.util.List;
import java.util.Objects;

/**
 * One fact a verdict rests on.
 *
 * @param kind what sort of fact; see {@link Kind} for the full list
 * @param ranks the global ranks it is about, sorted
 * @param detail one sentence a person can check against the raw data
 */
public record Evidence(Kind kind, List<Integer> ranks, String detail) {
  public Evidence {
    Objects.requireNonNull(kind, "kind");
    ranks = ranks.stream().sorted().toList();
  }

  /**
   * The sorts of fact, each written in reports as its {@linkplain #wire() wire name}: from the ranks' records
   * "rank_lost", "not_issued", "not_started", "completion_lag", "waiting", "all_started_none_completed",
   * "all_issued_none_completed", "no_snapshot", "signature_mismatch", "also_held_up", "cascade", "ran_ahead",
   * "insufficient", "rank_event", "sequence_mismatch", "unrecorded_ops", "snapshot_age", "earlier_cut"; from the
   * nodes' NCCL logs and InfiniBand counters "gpu_fault", "local_nic_fault", "link_fault", "dead_peer", "congestion", "note", "no_failure_logged",
   * "quiet_counters"; from kernel logs, launchers and NCCL RAS reports "gpu_xid", "process_died", "launch_lag",
   * "ras_consistent", "peer_path_error"; about the inputs "sources"; from collectives' timings "straggler",
   * "straggler_side", "skew", "joined", "clock_offset", "overlap", "trace_history".
   */
  public enum Kind {
    /** A member is gone (lost, unresponsive, or sent nothing) while its peers wait on it. */
    RANK_LOST("rank_lost"),
    /** Members never issued the stuck collective. */
    NOT_ISSUED("not_issued"),
    /** Members issued it and their devices never started it while peers' did. */
    NOT_STARTED("not_started"),
    /** Members issued it and never completed it, where device start events are not recorded. */
    COMPLETION_LAG("completion_lag"),
    /** Members started it and wait for it to complete. */
    WAITING("waiting"),
    /** Every member started it and none completed: points at the fabric. */
    ALL_STARTED_NONE_COMPLETED("all_started_none_completed"),
    /** Every member issued it and none completed, without device start events. */
    ALL_ISSUED_NONE_COMPLETED("all_issued_none_completed"),
    /** No fresh evidence from these ranks. */
    NO_SNAPSHOT("no_snapshot"),
    /** Members disagree on what an operation is (op, sizes, dtypes, peer). */
    SIGNATURE_MISMATCH("signature_mismatch"),
    /** A member timed out inside a collective that others completed and went past: seqs name different ops. */
    SEQUENCE_MISMATCH("sequence_mismatch"),
    /** The same culprits hold up more collectives. */
    ALSO_HELD_UP("also_held_up"),
    /** Collectives that wait only because of the root cause. */
    CASCADE("cascade"),
    /** Members issued many collectives past the stuck one: their program ran on without it. */
    RAN_AHEAD("ran_ahead"),
    /** What is missing to reach a verdict. */
    INSUFFICIENT("insufficient"),
    /** Ops the rings show only as op_id gaps (gloo records no send/recv): a rank blocked in one looks idle. */
    UNRECORDED_OPS("unrecorded_ops"),
    /** How long the peers had waited, as far as one snapshot can show it, against the group's own rhythm. */
    SNAPSHOT_AGE("snapshot_age"),
    /** Members whose evidence was taken before a collective completed that their peers show completed. */
    EARLIER_CUT("earlier_cut"),
    /** Timeouts and errors ranks reported. */
    RANK_EVENT("rank_event"),
    /** A CUDA failure or out-of-memory in a node's logs. */
    GPU_FAULT("gpu_fault"),
    /** A NIC, GPUDirect RDMA or PCIe fault local to one host. */
    LOCAL_NIC_FAULT("local_nic_fault"),
    /** A fault of the link between two hosts (IB status 12, link_downed, port errors). */
    LINK_FAULT("link_fault"),
    /** A peer that went away, as a node's logs tell it. */
    DEAD_PEER("dead_peer"),
    /** Congestion counters that moved. */
    CONGESTION("congestion"),
    /** Context that explains nothing by itself. */
    NOTE("note"),
    /** The nodes' NCCL logs show no failure. */
    NO_FAILURE_LOGGED("no_failure_logged"),
    /** No InfiniBand error counter moved during the hang. */
    QUIET_COUNTERS("quiet_counters"),
    /** A GPU fault the NVIDIA driver logged in a node's kernel log (Xid). */
    GPU_XID("gpu_xid"),
    /** A process of the job that died from outside or crashed (signal, OOM killer, launcher, NCCL RAS). */
    PROCESS_DIED("process_died"),
    /** NCCL RAS: ranks that launched fewer collectives than their peers. */
    LAUNCH_LAG("launch_lag"),
    /** NCCL RAS: every rank at the same collective counts, no process missing, no error. */
    RAS_CONSISTENT("ras_consistent"),
    /** A completion error towards a peer that does not tell a dead peer from a fabric fault. */
    PEER_PATH_ERROR("peer_path_error"),
    /** Which ranks were read from their recorded ring and which only from the lines they printed. */
    SOURCES("sources"),
    /**
     * Where a rank's Python main thread is, from its stack dump: inside a torch.distributed call (waiting for
     * peers), or stuck in its own code.
     */
    PYTHON_STACK("python_stack"),
    /** A rank that arrives late at collectives consistently: how often, by how much, what it cost its peers. */
    STRAGGLER("straggler"),
    /** Whether a straggler is late on the CPU side (issues late) or the GPU side (its device starts late). */
    STRAGGLER_SIDE("straggler_side"),
    /** How far the members' arrivals normally spread, and the lateness from which a rank counts as late. */
    SKEW("skew"),
    /** How collectives were joined across ranks (Seq, order, kernel names) and what did not join. */
    JOINED("joined"),
    /** Ranks whose clocks were aligned on the collectives' ends, and by how much. */
    CLOCK_OFFSET("clock_offset"),
    /** How much of the ranks' communication compute hid (profiler traces' kernel intervals). */
    OVERLAP("overlap"),
    /** What the profiler traces of the same job show of the stuck collective's group before it hung. */
    TRACE_HISTORY("trace_history");

    private final String wire;

    Kind(String wire) {
      this.wire = wire;
    }

    /** The name reports use, e.g. "not_issued". */
    public String wire() {
      return wire;
    }

    /**
     * The kind whose {@linkplain #wire() wire name} is {@code name}.
     *
     * @throws IllegalArgumentException naming the value when no kind has that name
     */
    public static Kind fromWire(String name) {
      for (Kind k : values()) {
        if (k.wire.equals(name)) {
          return k;
        }
      }
      throw new IllegalArgumentException("unknown evidence kind '" + name + "'");
    }
  }
}
