package dev.frdiag.readers.ib;

/** What the counters of a port say about a window, most severe first. */
public enum IbFindingKind {
  /** A device or port present in the first snapshot is gone from the second: HCA failure, reset or bus drop. */
  NIC_DISAPPEARED,
  /** The port is not ACTIVE or its link is not up. */
  PORT_DOWN,
  /** {@code link_downed} rose: the link went down and came back (a flap), matching NCCL {@code port error}. */
  LINK_FLAP,
  /** Physical-layer errors rose: {@code symbol_error}, {@code link_error_recovery}, {@code port_rcv_errors}… */
  LINK_ERRORS,
  /** RDMA retransmission counters rose ({@code local_ack_timeout_err}, {@code out_of_sequence}…): a lossy path. */
  RETRANSMISSION,
  /** {@code port_xmit_wait} or {@code port_xmit_discards} rose without link errors: slow, not dead. */
  CONGESTION,
  /** A port absent from the first snapshot appeared in the second. */
  NIC_APPEARED,
  /** No error, wait or retransmission counter moved: this port points away from the fabric. */
  QUIET
}
