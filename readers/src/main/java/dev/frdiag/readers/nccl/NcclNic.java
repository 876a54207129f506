package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * One network device NCCL said it uses ({@code NET/IB : Using [0]mlx5_0:1/RoCE …} or
 * {@code NET/Socket : Using [0]eth0:10.0.0.1<0>}).
 *
 * @param host the host that printed the line
 * @param net the network as NCCL names it: {@code IB}, {@code Socket}, or a plugin's name
 * @param index NCCL's device index, the {@code N} in {@code NET/IB/N} of the connection lines
 * @param device the device or interface: {@code mlx5_0}, {@code eth0}
 * @param port the IB port, or -1 for a socket interface
 * @param linkLayer {@code IB} or {@code RoCE} (plugins append flags such as {@code /SHARP}); empty for sockets
 * @param address the socket interface's address ({@code 10.0.0.1<0>}); empty for IB devices
 */
public record NcclNic(String host, String net, int index, String device, int port, String linkLayer,
    String address) {
  public NcclNic {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(net, "net");
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(linkLayer, "linkLayer");
    Objects.requireNonNull(address, "address");
  }

  /** True for an RDMA device (an IB-style {@code dev:port/link} entry), false for a socket interface. */
  boolean rdma() {
    return port >= 0;
  }
}
