package dev.frdiag.readers.nccl;

import java.time.LocalDateTime;
import java.util.Comparator;
import java.util.Objects;

/**
 * One classified line of an NCCL log: what happened, where it points, and the line itself.
 *
 * @param kind what the line reports
 * @param domain where it points; {@link FaultDomain#SECONDARY} and {@link FaultDomain#NOISE} are never blamed
 * @param timestamp the line's own timestamp (2.26+ WARN lines, local time of the host), or null when it has none
 * @param host the host that printed the line (NCCL cuts the name at the first dot)
 * @param pid the printing process
 * @param tid the printing thread
 * @param device the CUDA device ordinal in the prefix ({@code [3]}), after CUDA_VISIBLE_DEVICES
 * @param lineNumber 1-based line number in the log
 * @param line the line as found, leading launcher noise included, cut at 1,024 characters
 * @param codeLocation the {@code file.cc:line} of a WARN, or empty
 * @param peer the remote end named by the line ({@code 10.216.210.236<54862>}), or empty
 * @param nic the NIC port named by the line ({@code mlx5_0:1}), or empty
 * @param ibCompletion the completion fields of an {@link NcclEventKind#IB_COMPLETION_ERROR}, null otherwise
 * @param explanation one sentence a person can act on
 */
public record NcclEvent(NcclEventKind kind, FaultDomain domain, LocalDateTime timestamp, String host, int pid,
    int tid, int device, long lineNumber, String line, String codeLocation, String peer, String nic,
    IbCompletion ibCompletion, String explanation) {

  /**
   * Orders events by cause rather than by line order: the likely cause first, consequences after, noise last;
   * events of equal rank keep their line order.
   */
  static final Comparator<NcclEvent> BY_CAUSE =
      Comparator.comparingInt(NcclEvent::causeRank).thenComparingLong(NcclEvent::lineNumber);

  public NcclEvent {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(domain, "domain");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(line, "line");
    Objects.requireNonNull(codeLocation, "codeLocation");
    Objects.requireNonNull(peer, "peer");
    Objects.requireNonNull(nic, "nic");
    Objects.requireNonNull(explanation, "explanation");
    if (lineNumber < 1) {
      throw new IllegalArgumentException("line number must be positive, got " + lineNumber);
    }
  }

  /**
   * How early in a failure this kind of event comes, 0 first. A GPU failure kills its process, after which every
   * peer sees closed sockets and, on IB, retries exhausted towards the dead QPs; so GPU and configuration errors
   * rank before fabric errors, fabric before dead peers, and consequences last.
   */
  int causeRank() {
    switch (domain) {
      case GPU:
      case MISMATCH:
      case CONFIG:
        return 0;
      case FABRIC:
      case NODE_NETWORK:
        return 1;
      case DEAD_PEER:
      case PEER_PATH:
        return 2;
      case UNKNOWN:
        return 3;
      case SECONDARY:
        return kind == NcclEventKind.ERROR_PROPAGATION ? 5 : 4;
      default:
        return 6;
    }
  }

  /** The peer without its {@code <port>} suffix: {@code 10.216.210.236}; empty when the line names no peer. */
  public String peerAddress() {
    int lt = peer.indexOf('<');
    return lt < 0 ? peer : peer.substring(0, lt);
  }

  /** {@code host:pid [device]}, how NCCL itself names the printer. */
  String origin() {
    return host + ":" + pid + " [" + device + "]";
  }

  @Override
  public String toString() {
    return "line " + lineNumber + " " + kind + " (" + domain + ") on " + origin() + ": " + explanation;
  }
}
