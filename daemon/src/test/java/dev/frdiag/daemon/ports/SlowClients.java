package dev.frdiag.daemon.ports;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Connections that each send the start of a request and no more, as a slowloris attacker's do. They come from
 * several loopback addresses (127.0.0.2, 127.0.0.3, …), {@code perAddress} each, as an attacker with several hosts
 * would, so that a bound on connections per client does not turn them away on its own.
 */
final class SlowClients implements AutoCloseable {
  /** Half an HTTP/1.1 request: the request line and one header, never the blank line that ends the head. */
  static final byte[] HALF_HTTP_REQUEST = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n".getBytes(StandardCharsets.US_ASCII);
  /** The start of a TLS record announcing a ClientHello of 512 bytes, and 10 of them. */
  static final byte[] HALF_TLS_RECORD = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, (byte) 0xfc, 0x03, 0x03, 0,
      0, 0, 0};
  /** The first half of HTTP/2's connection preface, as a gRPC client starts. */
  static final byte[] HALF_HTTP2_PREFACE = "PRI * HTTP/2.0\r\n".getBytes(StandardCharsets.US_ASCII);

  /** How long a connection may take to be accepted; a port whose queue of connections is full takes none. */
  private static final int CONNECT_TIMEOUT_MS = 1_000;

  private final List<SocketChannel> open = new ArrayList<>();
  private final StringBuilder received = new StringBuilder();
  private int refused;

  /** Opens {@code count} connections to 127.0.0.1:{@code port}, each sending {@code start}. */
  SlowClients(int port, int count, int perAddress, byte[] start) throws IOException {
    this(port, count, perAddress, 2, start);
  }

  /** As above, from addresses 127.0.0.{@code firstHost} on. */
  SlowClients(int port, int count, int perAddress, int firstHost, byte[] start) throws IOException {
    try {
      // A port that stopped accepting is held already: after a few connections it did not take, stop trying.
      for (int i = 0; i < count && refused < 3; i++) {
        SocketChannel c = SocketChannel.open();
        c.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, (byte) (firstHost
            + i / perAddress)}), 0));
        try {
          c.socket().connect(new InetSocketAddress("127.0.0.1", port), CONNECT_TIMEOUT_MS);
          c.write(ByteBuffer.wrap(start));
          open.add(c);
        } catch (IOException notTaken) {
          c.close();
          refused++;
        }
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /** How many connections the port took. */
  int opened() {
    return open.size();
  }

  /** How many of the connections the server has not closed: a read on each shows no end of stream. */
  int stillOpen() throws IOException {
    int n = 0;
    for (SocketChannel c : open) {
      c.configureBlocking(false);
      try {
        int read;
        do {
          // What the server answered before closing, if anything, then the end of the stream.
          ByteBuffer b = ByteBuffer.allocate(4096);
          read = c.read(b);
          received.append(new String(b.array(), 0, Math.max(read, 0), StandardCharsets.ISO_8859_1));
        } while (read > 0);
        if (read == 0) {
          n++;
        }
      } catch (IOException reset) {
        // Closed by the server with a reset.
      }
    }
    return n;
  }

  /** Sends {@code more} on every connection still open. */
  void send(String more) {
    for (SocketChannel c : open) {
      try {
        c.write(ByteBuffer.wrap(more.getBytes(StandardCharsets.US_ASCII)));
      } catch (IOException closed) {
        // The server closed it: what the caller waits for.
      }
    }
  }

  /** What the connections received so far, as {@link #stillOpen} read it. */
  String received() {
    return received.toString();
  }

  @Override
  public void close() {
    for (SocketChannel c : open) {
      try {
        c.close();
      } catch (IOException ignored) {
        // Closing a socket the test no longer needs.
      }
    }
  }
}
