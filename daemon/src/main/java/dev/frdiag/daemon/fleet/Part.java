package dev.frdiag.daemon.fleet;

import java.util.Objects;

/**
 * One piece of hardware a report can blame or mark: a host, one of its GPUs, NICs or NIC ports, or the link from a
 * port to the peer a finding names.
 *
 * @param kind what sort of part
 * @param host the host it sits on (the host itself for {@link Kind#HOST})
 * @param name the part on its host: empty for a host, {@code cuda:3}, {@code mlx5_3}, {@code mlx5_3/1}, or
 *     {@code mlx5_3/1 -> 10.0.35.1} for a link
 */
public record Part(Kind kind, String host, String name) implements Comparable<Part> {
  /** The sorts of part, in the order a host's parts are listed. */
  public enum Kind {
    HOST, GPU, NIC, PORT, LINK
  }

  public Part {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(name, "name");
    if (host.isEmpty()) {
      throw new IllegalArgumentException("a part needs its host");
    }
    if ((kind == Kind.HOST) != name.isEmpty()) {
      throw new IllegalArgumentException("a host has no part name, every other part has one: " + kind + " '"
          + name + "'");
    }
  }

  /** The host itself. */
  public static Part host(String host) {
    return new Part(Kind.HOST, host, "");
  }

  /** How people write it: {@code node17}, {@code node17 cuda:3}, {@code node17 mlx5_3/1}. */
  public String display() {
    return name.isEmpty() ? host : host + " " + name;
  }

  @Override
  public int compareTo(Part o) {
    int c = host.compareTo(o.host);
    if (c == 0) {
      c = kind.compareTo(o.kind);
    }
    return c != 0 ? c : name.compareTo(o.name);
  }

  @Override
  public String toString() {
    return display();
  }
}
