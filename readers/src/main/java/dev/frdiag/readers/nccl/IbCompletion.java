package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * The fields of one {@code NET/IB : Got completion from peer …} line.
 *
 * @param status the ibv_wc_status code (12 = transport retry counter exceeded)
 * @param statusName the rdma-core name of {@code status}, such as {@code RETRY_EXC_ERR}
 * @param opcode the work-completion opcode as printed
 * @param length the length as printed
 * @param vendorErr the NIC vendor's error code (mlx5: 129 with status 12 is a timeout)
 * @param request {@code Send}, {@code Recv}, {@code Flush}, or empty when the line names none
 * @param localGid the local GID on RoCE, or empty
 * @param remoteGid the remote GID on RoCE, or empty
 * @param hca the reporting HCA ({@code hca mlx5_0}, 2.22+), or empty
 */
public record IbCompletion(int status, String statusName, long opcode, long length, long vendorErr, String request,
    String localGid, String remoteGid, String hca) {
  public IbCompletion {
    Objects.requireNonNull(statusName, "statusName");
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(localGid, "localGid");
    Objects.requireNonNull(remoteGid, "remoteGid");
    Objects.requireNonNull(hca, "hca");
  }

  /** True when the line carries GIDs, which NCCL prints only on RoCE. */
  boolean roce() {
    return !localGid.isEmpty() || !remoteGid.isEmpty();
  }

  /** The rdma-core name of an ibv_wc_status code, or {@code STATUS_<n>} for an unknown one. */
  static String statusName(int status) {
    switch (status) {
      case 0: return "SUCCESS";
      case 1: return "LOC_LEN_ERR";
      case 2: return "LOC_QP_OP_ERR";
      case 3: return "LOC_EEC_OP_ERR";
      case 4: return "LOC_PROT_ERR";
      case 5: return "WR_FLUSH_ERR";
      case 6: return "MW_BIND_ERR";
      case 7: return "BAD_RESP_ERR";
      case 8: return "LOC_ACCESS_ERR";
      case 9: return "REM_INV_REQ_ERR";
      case 10: return "REM_ACCESS_ERR";
      case 11: return "REM_OP_ERR";
      case 12: return "RETRY_EXC_ERR";
      case 13: return "RNR_RETRY_EXC_ERR";
      case 14: return "LOC_RDD_VIOL_ERR";
      case 15: return "REM_INV_RD_REQ_ERR";
      case 16: return "REM_ABORT_ERR";
      case 17: return "INV_EECN_ERR";
      case 18: return "INV_EEC_STATE_ERR";
      case 19: return "FATAL_ERR";
      case 20: return "RESP_TIMEOUT_ERR";
      case 21: return "GENERAL_ERR";
      default: return "STATUS_" + status;
    }
  }
}
