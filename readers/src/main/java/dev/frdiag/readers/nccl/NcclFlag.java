package dev.frdiag.readers.nccl;

/** Facts about a log worth a line in a report even when nothing failed. */
public enum NcclFlag {
  /** NCCL found no RDMA device and moves data over TCP sockets. */
  SOCKET_TRANSPORT("no RDMA NIC, Socket in use"),
  /** At least one GPU/NIC pair has GPUDirect RDMA disabled. */
  GDR_DISABLED("GPUDirect RDMA disabled for at least one GPU/NIC pair"),
  /** The log has PyTorch ProcessGroupNCCL lines but no NCCL event lines. */
  PYTORCH_WITHOUT_NCCL_EVENTS("PyTorch ProcessGroupNCCL lines found, but no NCCL event lines"),
  /** The log has NCCL lines but none reports a failure. */
  NO_FAILURE("no NCCL failure line"),
  /** The log's last line has no newline: the writer stopped mid-line, or the copy was cut. */
  TRUNCATED_LAST_LINE("the last line is incomplete"),
  /** Some events or entries were counted but not kept, to bound memory. */
  ENTRIES_CAPPED("some events or entries were counted but not kept"),
  /** The NCCL version is inferred from line formats, not printed. */
  VERSION_INFERRED("NCCL version inferred from the line formats");

  private final String description;

  NcclFlag(String description) {
    this.description = description;
  }

  /** What the flag means, in the words a report uses. */
  public String description() {
    return description;
  }
}
