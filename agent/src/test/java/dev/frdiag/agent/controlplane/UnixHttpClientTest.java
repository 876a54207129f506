package dev.frdiag.agent.controlplane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.agent.controlplane.ControlPlaneException.Reason;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Unix domain socket HTTP client against a server that answers with canned bytes. */
class UnixHttpClientTest {
  private static final UnixHttpClient CLIENT = new UnixHttpClient(Duration.ofSeconds(1), Duration.ofMillis(500),
      1000);

  @TempDir
  Path dir;

  private ServerSocketChannel server;
  private final CountDownLatch release = new CountDownLatch(1);

  @AfterEach
  void close() throws IOException {
    release.countDown();
    if (server != null) {
      server.close();
    }
  }

  @Test
  void postsWithAnEmptyBodyAndReadsAContentLengthAnswer() throws Exception {
    CompletableFuture<String> request = serve("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + "Content-Length: 7\r\n\r\n{\"a\":1}");

    HttpAnswer answer = CLIENT.post(socket(), "/handler/dump_nccl_trace_json?onlyactive=true");

    assertThat(answer.status()).isEqualTo(200);
    assertThat(answer.contentType()).isEqualTo("application/json");
    assertThat(new String(answer.body(), StandardCharsets.UTF_8)).isEqualTo("{\"a\":1}");
    assertThat(request.get(5, TimeUnit.SECONDS)).startsWith(
        "POST /handler/dump_nccl_trace_json?onlyactive=true HTTP/1.1\r\n")
        .contains("Content-Length: 0\r\n", "Connection: close\r\n").endsWith("\r\n\r\n");
  }

  @Test
  void readsAChunkedAnswerWithExtensionsAndTrailers() throws Exception {
    serve("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n"
        + "0\r\nX-Trailer: 1\r\n\r\n");

    assertThat(new String(CLIENT.post(socket(), "/x").body(), StandardCharsets.UTF_8)).isEqualTo("hello world");
  }

  @Test
  void readsAnAnswerThatEndsWithTheConnection() throws Exception {
    serve("HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\nHandler x not found");

    HttpAnswer answer = CLIENT.get(socket(), "/handler/x");

    assertThat(answer.status()).isEqualTo(404);
    assertThat(answer.text(100)).isEqualTo("Handler x not found");
  }

  @Test
  void refusesAnAnswerLargerThanItsBound() throws Exception {
    serve("HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n");

    assertThatThrownBy(() -> CLIENT.post(socket(), "/x")).isInstanceOfSatisfying(ControlPlaneException.class,
        e -> assertThat(e.reason()).isEqualTo(Reason.BAD_ANSWER))
        .hasMessage("the worker server at " + socket() + " sent a bad answer: the answer is 1001 bytes, more than"
            + " the 1000 allowed");
  }

  @Test
  void refusesAChunkedAnswerLargerThanItsBound() throws Exception {
    serve("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" + "x".repeat(1000)
        + "\r\n1\r\nx\r\n0\r\n\r\n");

    assertThatThrownBy(() -> CLIENT.post(socket(), "/x")).isInstanceOfSatisfying(ControlPlaneException.class,
        e -> assertThat(e.reason()).isEqualTo(Reason.BAD_ANSWER)).hasMessageEndingWith("larger than 1000 bytes");
  }

  @Test
  void saysSoWhenTheAnswerIsCutShort() throws Exception {
    serve("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");

    assertThatThrownBy(() -> CLIENT.post(socket(), "/x")).isInstanceOfSatisfying(ControlPlaneException.class,
        e -> assertThat(e.reason()).isEqualTo(Reason.BAD_ANSWER))
        .hasMessageContaining("the connection closed after").hasMessageContaining(socket().toString());
  }

  @Test
  void refusesWhatIsNotHttp() throws Exception {
    serve("SSH-2.0-OpenSSH\r\n\r\n");

    assertThatThrownBy(() -> CLIENT.post(socket(), "/x"))
        .hasMessageEndingWith("not an HTTP/1.x status line: 'SSH-2.0-OpenSSH'");
  }

  @Test
  void timesOutWhenTheServerDoesNotAnswer() throws Exception {
    serveAndHang();

    assertThatThrownBy(() -> CLIENT.post(socket(), "/x")).isInstanceOfSatisfying(ControlPlaneException.class,
        e -> assertThat(e.reason()).isEqualTo(Reason.TIMEOUT))
        .hasMessage("the worker server at " + socket() + " timed out its answer (0 bytes so far)");
  }

  @Test
  void saysNothingAcceptsOnASocketFileLeftBehind() throws Exception {
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX).bind(UnixDomainSocketAddress.of(socket()));
    server.close();

    assertThatThrownBy(() -> CLIENT.post(socket(), "/x")).isInstanceOfSatisfying(ControlPlaneException.class,
        e -> assertThat(e.reason()).isEqualTo(Reason.REFUSED))
        .hasMessageStartingWith("nothing accepts on " + socket())
        .hasMessageEndingWith("the rank is not running, or it left the socket file behind when it exited");
  }

  @Test
  void saysThereIsNoSocketWhenTheFileIsMissing() {
    assertThatThrownBy(() -> CLIENT.post(socket(), "/x")).isInstanceOfSatisfying(ControlPlaneException.class,
        e -> assertThat(e.reason()).isEqualTo(Reason.NO_SOCKET))
        .hasMessage("no worker server socket at " + socket());
  }

  private Path socket() {
    return dir.resolve("w.sock");
  }

  /** Accepts one connection, reads the request head, answers {@code answer} and closes; completes with the head. */
  private CompletableFuture<String> serve(String answer) throws IOException {
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX).bind(UnixDomainSocketAddress.of(socket()));
    return CompletableFuture.supplyAsync(() -> {
      try (SocketChannel ch = server.accept()) {
        String head = readHead(ch);
        ByteBuffer out = ByteBuffer.wrap(answer.getBytes(StandardCharsets.ISO_8859_1));
        while (out.hasRemaining()) {
          ch.write(out);
        }
        return head;
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
  }

  /** Accepts one connection and never answers until the test ends. */
  private void serveAndHang() throws IOException {
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX).bind(UnixDomainSocketAddress.of(socket()));
    CompletableFuture.runAsync(() -> {
      try (SocketChannel ch = server.accept()) {
        readHead(ch);
        release.await();
      } catch (IOException | InterruptedException e) {
        // The test is over.
      }
    });
  }

  private static String readHead(SocketChannel ch) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    ByteBuffer one = ByteBuffer.allocate(1);
    while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      one.clear();
      if (ch.read(one) < 0) {
        break;
      }
      head.write(one.array()[0]);
    }
    return head.toString(StandardCharsets.ISO_8859_1);
  }
}
