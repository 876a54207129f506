package dev.frdiag.cli;

import dev.frdiag.command.ClientSecurity;
import dev.frdiag.proto.Contract;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import picocli.CommandLine;

/** A daemon's host:port as given on the command line. */
public record DaemonAddress(String host, int port) {
  /** Parses "host:port", "[v6]:port" or a bare host (the default port). */
  public static DaemonAddress parse(String value) {
    String v = value.trim();
    int colon = v.lastIndexOf(':');
    if (colon < 0 || v.endsWith("]")) {
      return new DaemonAddress(v, Contract.DEFAULT_PORT);
    }
    try {
      int port = Integer.parseInt(v.substring(colon + 1));
      if (port < 1 || port > 65_535) {
        throw new NumberFormatException();
      }
      return new DaemonAddress(v.substring(0, colon).replace("[", "").replace("]", ""), port);
    } catch (NumberFormatException e) {
      throw new CommandLine.TypeConversionException("'" + value + "' is not host:port (e.g. " + Contract.DEFAULT_DAEMON + ")");
    }
  }

  /** A channel to the daemon, over TLS and with a token when {@code security} says so. */
  public ManagedChannel open(ClientSecurity security) {
    return NettyChannelBuilder.forAddress(host, port, security.credentials()).maxInboundMessageSize(64 * 1024 * 1024)
        .build();
  }

  @Override
  public String toString() {
    return host + ":" + port;
  }

  /** picocli converter. */
  public static final class Converter implements CommandLine.ITypeConverter<DaemonAddress> {
    @Override
    public DaemonAddress convert(String value) {
      return parse(value);
    }
  }
}
