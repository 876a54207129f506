package dev.frdiag.readers.pytorch;

/**
 * One PyTorch ProcessGroupNCCL watchdog line that says something about a hang.
 *
 * @param kind what the line reports
 * @param globalRank the {@code [rankN]} glog prefix (global rank); -1 when the line has none
 * @param groupRank the rank inside the process group ({@code [Rank N]}, {@code [PG … Rank N]}); -1 when absent
 * @param pgName the process group's name, the same on every member and in Flight Recorder dumps: {@code y} in
 *     {@code [PG ID x PG GUID y]} (the id {@code x} counts groups per process, so it collides across ranks), {@code x}
 *     in {@code [PG x Rank r]}; empty when absent
 * @param pgDesc the process group description ({@code (default_pg)}); empty when absent
 * @param seq the work sequence number concerned ({@code SeqNum=}, {@code at work sequence id:}); -1 when absent
 * @param opType {@code OpType=} as printed ("ALLREDUCE"); empty when absent
 * @param numelIn {@code NumelIn=}; -1 when absent
 * @param numelOut {@code NumelOut=}; -1 when absent
 * @param timeoutMs {@code Timeout(ms)=}; -1 when absent
 * @param lastEnqueued the rank's last enqueued work seq for the group; -1 when absent
 * @param lastCompleted the rank's last completed work seq for the group; -1 when absent
 * @param fromRank for a dump signal from another rank: that rank; -1 otherwise
 * @param stuckSeconds how long the watchdog thread did not run: what a stuck-watchdog line says, or how late a
 *     timeout line was noticed when that is far past its timeout (the watchdog had stopped); -1 otherwise
 * @param source file name and line number, e.g. "train.log:812"
 * @param text the line as read (without trailing newline)
 */
public record WatchdogLine(Kind kind, int globalRank, int groupRank, String pgName, String pgDesc, long seq,
    String opType, long numelIn, long numelOut, long timeoutMs, long lastEnqueued, long lastCompleted,
    int fromRank, long stuckSeconds, String source, String text) {

  /** What a watchdog line reports. */
  public enum Kind {
    /** "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=…)". */
    TIMEOUT,
    /** The per-group status: stuck seq, last enqueued, last completed. */
    PG_STATUS,
    /** "Received a dump signal …": the rank was told (or decided) to dump its flight recorder. */
    DUMP_SIGNAL,
    /** "watchdog got stuck for N seconds" or "Heartbeat monitor timed out!": the watchdog thread itself is blocked. */
    WATCHDOG_STUCK,
    /**
     * A CUDA error or out-of-memory the rank's process reported ("watchdog thread terminated with exception: CUDA
     * error: …", "torch.OutOfMemoryError: CUDA out of memory"): a fault on that rank's own device.
     */
    CUDA_ERROR,
    /**
     * PyTorch's collective checker (TORCH_DISTRIBUTED_DEBUG=DETAIL) says the rank is running this collective:
     * "Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(…)".
     * One line names several ranks; each becomes a line of its own, about that rank (by its rank in the group).
     * The checker also prints one line per rank as it enters each collective's check: "[Rank 2] Running
     * collective: CollectiveFingerPrint(SequenceNumber=1276, …)".
     */
    RUNNING,
    /**
     * The collective checker says this rank's collective differs from a peer's without showing the peer's:
     * "Detected mismatch between collectives on ranks. Rank 1 is running inconsistent collective:
     * CollectiveFingerPrint(OpType=…)" (PyTorch 1.10). A program mismatch by PyTorch's own check.
     */
    MISMATCH_REPORTED
  }

  /** The rank this line is about: the global rank when printed, else the group rank. */
  public int rank() {
    return globalRank >= 0 ? globalRank : groupRank;
  }
}
