package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * One per-channel connection line: {@code Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA}.
 *
 * @param host the host that printed the line
 * @param pid the process that printed it
 * @param commId the communicator the printing process was last setting up, or empty when unknown
 * @param channel the channel
 * @param fromRank the sending rank
 * @param fromDev the sender's {@code [x]}: nvmlDev in 2.18+, a bus id in older logs
 * @param toRank the receiving rank
 * @param toDev the receiver's {@code [x]}
 * @param direction {@code [send]}/{@code [receive]} for network connections, {@link Direction#NONE} otherwise
 * @param kind the transport
 * @param via the text after {@code via}, e.g. {@code P2P/CUMEM/read}, {@code NET/IB/0(1)/GDRDMA}
 * @param net for {@link Kind#NET}: the network's name ({@code IB}, {@code Socket}, a plugin); empty otherwise
 * @param nic for {@link Kind#NET}: NCCL's NIC index; -1 otherwise
 * @param proxyRank for PXN connections, the rank whose NIC is used ({@code NET/IB/0(1)}); -1 otherwise
 * @param gdr true when the line says {@code GDRDMA}
 * @param lineNumber where the line is
 */
public record ChannelTransport(String host, int pid, String commId, int channel, int fromRank, String fromDev,
    int toRank, String toDev, Direction direction, Kind kind, String via, String net, int nic, int proxyRank,
    boolean gdr, long lineNumber) {

  /** The transport classes NCCL prints after {@code via}. */
  public enum Kind {
    /** GPU to GPU over NVLink or PCIe ({@code P2P/IPC}, {@code P2P/CUMEM}, {@code P2P/direct pointer}). */
    P2P,
    /** Through host shared memory ({@code SHM/direct/direct}). */
    SHM,
    /** Through a NIC ({@code NET/IB/…}, {@code NET/Socket/…}). */
    NET,
    /** CollNet (in-network reduction). */
    COLLNET,
    /** Anything else NCCL may print. */
    OTHER
  }

  /** Which end of a network connection printed the line. */
  public enum Direction {
    SEND,
    RECEIVE,
    /** P2P and SHM lines, printed by the sender without a direction. */
    NONE
  }

  public ChannelTransport {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(commId, "commId");
    Objects.requireNonNull(fromDev, "fromDev");
    Objects.requireNonNull(toDev, "toDev");
    Objects.requireNonNull(direction, "direction");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(via, "via");
    Objects.requireNonNull(net, "net");
  }

  /** The rank whose process printed the line: the receiver of a {@code [receive]} line, else the sender. */
  int printingRank() {
    return direction == Direction.RECEIVE ? toRank : fromRank;
  }
}
