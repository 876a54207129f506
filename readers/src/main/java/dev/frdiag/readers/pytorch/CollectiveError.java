package dev.frdiag.readers.pytorch;

import java.util.Objects;

/**
 * A failure of torch.distributed that a process printed outside the watchdog's lines: a Python exception raised
 * from a collective or process-group call, or gloo's own transport error.
 *
 * @param kind what the line reports
 * @param rank the global rank the line's {@code [rankN]:} prefix names; -1 when none
 * @param call the torch.distributed function the traceback ended in ({@code all_reduce}, {@code barrier}); empty
 *     when no traceback frame was read
 * @param message the exception or error as printed, cut to {@link CollectiveErrorReader#MAX_MESSAGE} characters
 * @param peer for a gloo connection closed by its peer: the peer's address; empty otherwise
 * @param source file name and line number, e.g. "train.log:812"
 */
public record CollectiveError(Kind kind, int rank, String call, String message, String peer, String source) {
  /** What a collective error line reports. */
  public enum Kind {
    /** A Python exception raised in (or naming) a collective or process-group call. */
    RAISED,
    /** gloo: "Connection closed by peer [addr]:port": the process at the other end went away. */
    PEER_CLOSED,
    /** gloo: "Timed out waiting Nms for recv operation to complete": a collective that did not finish in time. */
    TIMED_OUT,
    /**
     * A CUDA failure on a line that names no rank ("RuntimeError: Triton Error [CUDA]: an illegal memory access was
     * encountered"): a GPU of the job failed; which one, the line does not say.
     */
    CUDA_FAILED,
    /**
     * A stack (a traceback printed without its exception, or py-spy's dump) whose innermost torch.distributed frame
     * is a collective: the rank is inside it, waiting for its peers; nothing failed.
     */
    WAITING
  }

  public CollectiveError {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(call, "call");
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(peer, "peer");
    Objects.requireNonNull(source, "source");
  }
}
