package dev.frdiag.readers.nccl;

/** Where an NCCL log event points: the part of the system to suspect first. */
public enum FaultDomain {
  /** A CUDA failure on the reporting GPU: out of memory, illegal address, NVLink SHARP bind. */
  GPU,
  /** Ranks disagree with each other: NCCL versions, message sizes. */
  MISMATCH,
  /** The job's or host's configuration: two ranks on one GPU. */
  CONFIG,
  /** The NIC, GPUDirect RDMA or PCIe path of the reporting host: IB local protection and access errors. */
  NODE_NETWORK,
  /** Links, switches or routing between hosts: IB transport retries exhausted, port errors, QP bring-up. */
  FABRIC,
  /** The peer process went away or stopped receiving: socket closed by the peer, RNR retries exhausted. */
  DEAD_PEER,
  /**
   * A transfer to a peer failed and the line cannot tell the peer's death from the path's failure: a network
   * plugin's completion errors (libfabric EFA, AWS OFI).
   */
  PEER_PATH,
  /** A WARN the parser does not classify. */
  UNKNOWN,
  /** A consequence of another failure, never blamed: flushed work requests, error propagation, proxy failures. */
  SECONDARY,
  /** Not a failure: teardown and informational lines. */
  NOISE;

  /** True when an event of this domain can be the cause of a failure (not {@link #SECONDARY} nor {@link #NOISE}). */
  public boolean isLead() {
    return this != SECONDARY && this != NOISE;
  }
}
