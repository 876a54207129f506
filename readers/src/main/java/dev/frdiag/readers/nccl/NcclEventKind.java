package dev.frdiag.readers.nccl;

/** The kinds of failure-related lines the NCCL log parser recognises. */
public enum NcclEventKind {
  /** {@code NET/IB : Got completion from peer … with error|status=N …}: a work request failed on the NIC. */
  IB_COMPLETION_ERROR,
  /** {@code NET/IB : mlx5_0:1 Got async event|async error event|async fatal event …}. */
  IB_ASYNC_EVENT,
  /** {@code Call to ibv_modify_qp failed …}: a queue pair could not be brought up. */
  IB_QP_SETUP_FAILED,
  /** {@code socketProgress: Connection closed by remote peer …}. */
  SOCKET_CLOSED_BY_PEER,
  /** {@code Call to recv from … failed} / {@code Call to send to … failed}. */
  SOCKET_IO_FAILED,
  /** {@code NET/Socket : peer … message truncated}: peers disagree on a message size. */
  SOCKET_MESSAGE_TRUNCATED,
  /** {@code [Proxy Service N] Failed to execute operation …}, {@code Socket recv failed while polling for opId}. */
  PROXY_FAILURE,
  /** {@code Cuda failure 'out of memory'}, {@code Cuda failure 700 '…'}. */
  CUDA_FAILURE,
  /** {@code Failed to CUDA calloc N bytes}: out of GPU memory while setting up a communicator. */
  CUDA_ALLOC_FAILED,
  /** {@code Failed to bind NVLink SHARP (NVLS) Multicast memory …}. */
  NVLS_BIND_FAILED,
  /** {@code P2P is disabled between NVLINK connected GPUs …}. */
  P2P_DISABLED,
  /** {@code Mismatched NCCL version detected …}. */
  VERSION_MISMATCH,
  /** {@code Duplicate GPU detected …}. */
  DUPLICATE_GPU,
  /** {@code communicator encountered a fatal error …}: NCCL failing a communicator after an earlier error. */
  COMM_FATAL_ERROR,
  /** A WARN line of none of the kinds above. */
  OTHER_WARN,
  /** An NCCLCHECK line {@code file.cc:line -> N}: an error travelling up the call stack. */
  ERROR_PROPAGATION,
  /** {@code Abort COMPLETE}, {@code [Service thread] Connection closed by localRank N}. */
  TEARDOWN,
  /** {@code comm 0x… rank R nranks N … - Destroy COMPLETE}: a communicator torn down cleanly. */
  COMM_DESTROYED,
  /**
   * A completion error a network plugin reports towards a peer, e.g. libfabric's EFA provider
   * ({@code efa_rdm_txe_handle_error … err: 5, message: Invalid address … Peer host id: i-…}) or the AWS OFI
   * plugin ({@code NET/OFI Request … completed with error}).
   */
  NET_PLUGIN_COMPLETION_ERROR
}
