package dev.frdiag.readers.ib;

import java.util.Objects;

/**
 * One port of one RDMA device, as sysfs names it: {@code mlx5_0} port {@code 1}.
 *
 * @param device the device directory name under {@code /sys/class/infiniband}
 * @param port the port number under {@code ports/}
 */
public record IbPortId(String device, int port) implements Comparable<IbPortId> {
  public IbPortId {
    Objects.requireNonNull(device, "device");
    if (device.isEmpty()) {
      throw new IllegalArgumentException("device must not be empty");
    }
    if (port < 0) {
      throw new IllegalArgumentException("port must not be negative, got " + port);
    }
  }

  /** Orders {@code mlx5_2} before {@code mlx5_10}, then by port. */
  @Override
  public int compareTo(IbPortId o) {
    int c = naturalCompare(device, o.device);
    return c != 0 ? c : Integer.compare(port, o.port);
  }

  /** {@code mlx5_0:1}, as NCCL and ibstat print it. */
  @Override
  public String toString() {
    return device + ":" + port;
  }

  private static int naturalCompare(String a, String b) {
    int sa = digitsStart(a);
    int sb = digitsStart(b);
    int c = a.substring(0, sa).compareTo(b.substring(0, sb));
    if (c != 0 || sa == a.length() || sb == b.length() || a.length() - sa > 9 || b.length() - sb > 9) {
      return c != 0 ? c : a.compareTo(b);
    }
    return Integer.compare(Integer.parseInt(a.substring(sa)), Integer.parseInt(b.substring(sb)));
  }

  private static int digitsStart(String s) {
    int i = s.length();
    while (i > 0 && Character.isDigit(s.charAt(i - 1))) {
      i--;
    }
    return i;
  }
}
