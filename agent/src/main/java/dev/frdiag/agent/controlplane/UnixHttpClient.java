package dev.frdiag.agent.controlplane;

import dev.frdiag.agent.controlplane.ControlPlaneException.Reason;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * A small HTTP/1.1 client over Unix domain sockets: one request per connection ({@code Connection: close}), a
 * deadline for connecting and one for the whole answer, and a bound on the answer's size. Bodies framed by
 * Content-Length, by chunked transfer coding, or by the end of the connection are read.
 *
 * <p>Immutable and thread-safe; every call opens and closes its own connection.
 */
public final class UnixHttpClient {
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(1);
  public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(5);
  public static final int DEFAULT_MAX_ANSWER_BYTES = 16 << 20;
  /** Status line and headers larger than this are not an answer we expect from a worker server. */
  static final int MAX_HEADER_BYTES = 16 << 10;

  private final long connectTimeoutNanos;
  private final long readTimeoutNanos;
  private final int maxAnswerBytes;

  /**
   * @param connectTimeout how long connecting may take
   * @param readTimeout how long the whole answer may take once connected
   * @param maxAnswerBytes answers whose body is larger are refused
   */
  public UnixHttpClient(Duration connectTimeout, Duration readTimeout, int maxAnswerBytes) {
    this.connectTimeoutNanos = positive(connectTimeout, "connectTimeout").toNanos();
    this.readTimeoutNanos = positive(readTimeout, "readTimeout").toNanos();
    if (maxAnswerBytes < 1) {
      throw new IllegalArgumentException("maxAnswerBytes must be positive, got " + maxAnswerBytes);
    }
    this.maxAnswerBytes = maxAnswerBytes;
  }

  /** A client with the default timeouts and bound. */
  public static UnixHttpClient withDefaults() {
    return new UnixHttpClient(DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, DEFAULT_MAX_ANSWER_BYTES);
  }

  /**
   * Sends {@code POST target} with an empty body and reads the answer, whatever its status.
   *
   * @param target the path and query, such as {@code /handler/dump_nccl_trace_json?onlyactive=true}
   * @throws ControlPlaneException naming the socket when no well-formed answer came
   */
  public HttpAnswer post(Path socket, String target) throws ControlPlaneException {
    return exchange("POST", socket, target);
  }

  /** Sends {@code GET target} and reads the answer, whatever its status. */
  public HttpAnswer get(Path socket, String target) throws ControlPlaneException {
    return exchange("GET", socket, target);
  }

  private HttpAnswer exchange(String method, Path socket, String target) throws ControlPlaneException {
    Objects.requireNonNull(socket, "socket");
    Objects.requireNonNull(target, "target");
    if (!target.startsWith("/") || target.chars().anyMatch(c -> c <= ' ' || c >= 127)) {
      throw new IllegalArgumentException("not a request target: '" + target + "'");
    }
    if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
      throw new ControlPlaneException(socket, Reason.NO_SOCKET, "no worker server socket at " + socket);
    }
    byte[] request = (method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nUser-Agent: frdiag-agent\r\n"
        + "Accept: */*\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX); Selector selector = Selector.open()) {
      ch.configureBlocking(false);
      SelectionKey key = ch.register(selector, 0);
      connect(ch, key, socket);
      long deadline = System.nanoTime() + readTimeoutNanos;
      ByteBuffer out = ByteBuffer.wrap(request);
      key.interestOps(SelectionKey.OP_WRITE);
      while (out.hasRemaining()) {
        if (ch.write(out) == 0) {
          await(selector, deadline, socket, "sending the request");
        }
      }
      key.interestOps(SelectionKey.OP_READ);
      AnswerParser parser = new AnswerParser(socket, maxAnswerBytes);
      ByteBuffer in = ByteBuffer.allocate(64 << 10);
      while (true) {
        in.clear();
        int n = ch.read(in);
        if (n < 0) {
          return parser.finish();
        }
        if (n == 0) {
          await(selector, deadline, socket, "its answer (" + parser.received() + " bytes so far)");
          continue;
        }
        HttpAnswer answer = parser.add(in.array(), n);
        if (answer != null) {
          return answer;
        }
      }
    } catch (ControlPlaneException e) {
      throw e;
    } catch (IOException e) {
      throw new ControlPlaneException(socket, Reason.IO, "talking to the worker server at " + socket + " failed: "
          + e, e);
    }
  }

  private void connect(SocketChannel ch, SelectionKey key, Path socket) throws IOException {
    try {
      if (ch.connect(UnixDomainSocketAddress.of(socket))) {
        return;
      }
      long deadline = System.nanoTime() + connectTimeoutNanos;
      key.interestOps(SelectionKey.OP_CONNECT);
      while (!ch.finishConnect()) {
        await(key.selector(), deadline, socket, "connecting");
      }
    } catch (ConnectException e) {
      throw new ControlPlaneException(socket, Reason.REFUSED, "nothing accepts on " + socket + " (" + e.getMessage()
          + "): the rank is not running, or it left the socket file behind when it exited", e);
    }
  }

  private static void await(Selector selector, long deadline, Path socket, String what) throws IOException {
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      throw new ControlPlaneException(socket, Reason.TIMEOUT, "the worker server at " + socket
          + " timed out " + what);
    }
    selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left + 999_999)));
    selector.selectedKeys().clear();
  }

  private static Duration positive(Duration d, String name) {
    Objects.requireNonNull(d, name);
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(name + " must be positive, got " + d);
    }
    return d;
  }

  /** Collects the bytes of one answer and tells when they make a whole one. Not thread-safe. */
  static final class AnswerParser {
    private final Path socket;
    private final int maxBody;
    private final int maxRaw;
    private byte[] buf = new byte[8 << 10];
    private int len;
    /** Set once the headers are read. */
    private int bodyStart = -1;
    private int status;
    private String contentType = "";
    private long contentLength = -1;
    private boolean chunked;
    /** The chunks decoded so far and where the next one starts: each read decodes only what is new. */
    private final ByteArrayOutputStream chunks = new ByteArrayOutputStream();
    private int chunkPos = -1;

    AnswerParser(Path socket, int maxBody) {
      this.socket = socket;
      this.maxBody = maxBody;
      // Chunk framing adds a few bytes per chunk; headers are bounded on their own.
      this.maxRaw = (int) Math.min(Integer.MAX_VALUE - 8, (long) maxBody + maxBody / 8 + MAX_HEADER_BYTES + 64);
    }

    int received() {
      return len;
    }

    /** Adds {@code n} bytes; returns the answer once it is whole, else null. */
    HttpAnswer add(byte[] bytes, int n) throws ControlPlaneException {
      if ((long) len + n > maxRaw) {
        throw bad("the answer is larger than " + maxBody + " bytes");
      }
      if (len + n > buf.length) {
        buf = Arrays.copyOf(buf, (int) Math.min(maxRaw, Math.max((long) buf.length * 2, (long) len + n)));
      }
      System.arraycopy(bytes, 0, buf, len, n);
      len += n;
      return complete(false);
    }

    /** The connection ended: the answer as it stands, which must be whole. */
    HttpAnswer finish() throws ControlPlaneException {
      HttpAnswer answer = complete(true);
      if (answer == null) {
        throw bad("the connection closed after " + len + " bytes, before the answer was complete");
      }
      return answer;
    }

    private HttpAnswer complete(boolean eof) throws ControlPlaneException {
      if (bodyStart < 0 && !headers()) {
        if (len > MAX_HEADER_BYTES) {
          throw bad("no end of headers in the first " + MAX_HEADER_BYTES + " bytes");
        }
        return null;
      }
      if (chunked) {
        byte[] body = dechunk();
        return body == null ? null : new HttpAnswer(status, contentType, body);
      }
      if (contentLength >= 0) {
        if (len - bodyStart < contentLength) {
          return null;
        }
        return new HttpAnswer(status, contentType, Arrays.copyOfRange(buf, bodyStart,
            bodyStart + (int) contentLength));
      }
      if (len - bodyStart > maxBody) {
        throw bad("the answer is larger than " + maxBody + " bytes");
      }
      // Neither length nor chunks: the body ends with the connection.
      return eof ? new HttpAnswer(status, contentType, Arrays.copyOfRange(buf, bodyStart, len)) : null;
    }

    /** Reads the status line and headers once they are all there; false while they are not. */
    private boolean headers() throws ControlPlaneException {
      int end = indexOf(buf, 0, len, "\r\n\r\n");
      if (end < 0) {
        return false;
      }
      String[] lines = new String(buf, 0, end, StandardCharsets.ISO_8859_1).split("\r\n");
      String[] statusLine = lines[0].split(" ", 3);
      if (statusLine.length < 2 || !statusLine[0].startsWith("HTTP/1.") || !statusLine[1].matches("\\d{3}")) {
        throw bad("not an HTTP/1.x status line: '" + printable(lines[0]) + "'");
      }
      int code = Integer.parseInt(statusLine[1]);
      if (code >= 100 && code < 200) {
        // An interim answer (100 Continue): the real one follows.
        System.arraycopy(buf, end + 4, buf, 0, len - end - 4);
        len -= end + 4;
        return headers();
      }
      status = code;
      for (int i = 1; i < lines.length; i++) {
        int colon = lines[i].indexOf(':');
        if (colon <= 0) {
          throw bad("malformed header line '" + printable(lines[i]) + "'");
        }
        String name = lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT);
        String value = lines[i].substring(colon + 1).trim();
        switch (name) {
          case "content-length" -> {
            if (!value.matches("\\d{1,18}")) {
              throw bad("bad Content-Length '" + printable(value) + "'");
            }
            contentLength = Long.parseLong(value);
            if (contentLength > maxBody) {
              throw bad("the answer is " + contentLength + " bytes, more than the " + maxBody + " allowed");
            }
          }
          case "transfer-encoding" -> chunked = value.toLowerCase(Locale.ROOT).endsWith("chunked");
          case "content-type" -> contentType = value;
          default -> {
            // Other headers do not matter to a one-request connection.
          }
        }
      }
      bodyStart = end + 4;
      return true;
    }

    /** The chunked body once its last chunk and trailers are there; null while they are not. */
    private byte[] dechunk() throws ControlPlaneException {
      ByteArrayOutputStream body = chunks;
      if (chunkPos < 0) {
        chunkPos = bodyStart;
      }
      int pos = chunkPos;
      while (true) {
        int eol = indexOf(buf, pos, len, "\r\n");
        if (eol < 0) {
          if (len - pos > 1024) {
            throw bad("a chunk size line longer than 1024 bytes");
          }
          return null;
        }
        String line = new String(buf, pos, eol - pos, StandardCharsets.ISO_8859_1);
        int semi = line.indexOf(';');
        String hex = (semi >= 0 ? line.substring(0, semi) : line).trim();
        if (!hex.matches("[0-9A-Fa-f]{1,8}")) {
          throw bad("bad chunk size '" + printable(line) + "'");
        }
        long size = Long.parseLong(hex, 16);
        pos = eol + 2;
        if (size == 0) {
          // Trailers, if any, end with an empty line.
          while (true) {
            int end = indexOf(buf, pos, len, "\r\n");
            if (end < 0) {
              return null;
            }
            if (end == pos) {
              return body.toByteArray();
            }
            pos = end + 2;
          }
        }
        if (body.size() + size > maxBody) {
          throw bad("the answer is larger than " + maxBody + " bytes");
        }
        if (len - pos < size + 2) {
          return null;
        }
        if (buf[pos + (int) size] != '\r' || buf[pos + (int) size + 1] != '\n') {
          throw bad("a chunk of " + size + " bytes is not followed by CRLF");
        }
        body.write(buf, pos, (int) size);
        pos += (int) size + 2;
        chunkPos = pos;
      }
    }

    private ControlPlaneException bad(String what) {
      return new ControlPlaneException(socket, Reason.BAD_ANSWER, "the worker server at " + socket
          + " sent a bad answer: " + what);
    }

    private static String printable(String s) {
      String cut = s.length() > 80 ? s.substring(0, 80) + "…" : s;
      return cut.replaceAll("[^\\x20-\\x7e…]", "?");
    }

    private static int indexOf(byte[] a, int from, int to, String what) {
      byte[] w = what.getBytes(StandardCharsets.US_ASCII);
      outer:
      for (int i = from; i <= to - w.length; i++) {
        for (int j = 0; j < w.length; j++) {
          if (a[i + j] != w[j]) {
            continue outer;
          }
        }
        return i;
      }
      return -1;
    }
  }
}
