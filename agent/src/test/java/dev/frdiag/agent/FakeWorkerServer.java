package dev.frdiag.agent;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.URLDecoder;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * PyTorch's worker server as torch 2.13 serves it on a Unix domain socket (measured on real torch 2.13.0+cpu
 * ranks, as the recordings in resources/torch-2.13-cpu say): {@code GET /} a short page, {@code GET /handler/} the JSON list of handler names, {@code POST
 * /handler/<name>} runs a handler, a GET on a handler is a bare 404, and an unknown handler answers 404 with
 * {@code Handler <name> not found: Failed to find handler <name>}. One request per connection, as the agent makes
 * them. Refuses to start over an existing socket file, as PyTorch does.
 */
public final class FakeWorkerServer {
  /** The handlers of a CPU build of torch 2.13, in the order its worker server lists them. */
  public static final String CPU_HANDLERS = "[\"dump_traceback\",\"pyspy_dump\",\"wait_counter_values\","
      + "\"fr_trace_json\",\"ping\"]";

  /** One answer of a handler. */
  public record Answer(int status, String type, byte[] body) {
    public static Answer ok(String type, byte[] body) {
      return new Answer(200, type, body);
    }

    public static Answer text(int status, String text) {
      return new Answer(status, "text/plain", text.getBytes(StandardCharsets.UTF_8));
    }
  }

  private FakeWorkerServer() {}

  /**
   * Serves {@code handlers} (by name, in listing order; each given the request's query parameters) on
   * {@code socket} until the returned channel is closed, which leaves the socket file behind as a rank that died
   * does.
   */
  public static ServerSocketChannel serve(Path socket, Map<String, Function<Map<String, String>, Answer>> handlers)
      throws IOException {
    if (Files.exists(socket)) {
      throw new IOException(socket + " already exists");
    }
    Map<String, Function<Map<String, String>, Answer>> known = new LinkedHashMap<>(handlers);
    ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socket));
    Thread t = new Thread(() -> {
      while (server.isOpen()) {
        try (SocketChannel ch = server.accept()) {
          handle(known, ch);
        } catch (IOException e) {
          // The client went away mid-request, or the server was closed.
        }
      }
    }, "fake-worker-server " + socket.getFileName());
    t.setDaemon(true);
    t.start();
    return server;
  }

  /**
   * Serves what rank {@code rank}'s worker server answered in a recorded torch 2.13.0+cpu job (test resources
   * under {@code torch-2.13-cpu/<scenario>/}): the CPU build's handlers, {@code fr_trace_json} and
   * {@code dump_traceback} as recorded, {@code pyspy_dump} failing as it does without py-spy on the rank's PATH.
   */
  public static ServerSocketChannel serveRecorded(Path socket, String scenario, int rank) throws IOException {
    String dir = "/torch-2.13-cpu/" + scenario + "/";
    byte[] ring = resource(dir + "fr_trace_json_rank_" + rank + ".json");
    byte[] traceback = resource(dir + "dump_traceback_rank_" + rank + ".txt");
    Map<String, Function<Map<String, String>, Answer>> handlers = new LinkedHashMap<>();
    handlers.put("dump_traceback", params -> Answer.ok("text/plain", traceback));
    handlers.put("pyspy_dump", params -> Answer.text(500, "sh: 1: py-spy: not found"));
    handlers.put("wait_counter_values", params -> Answer.ok("application/json", "{}".getBytes(
        StandardCharsets.UTF_8)));
    // The handler ignores the request's parameters: always the whole ring.
    handlers.put("fr_trace_json", params -> Answer.ok("application/json", ring));
    handlers.put("ping", params -> Answer.text(200, "pong"));
    return serve(socket, handlers);
  }

  /** A test resource's bytes. */
  public static byte[] resource(String name) throws IOException {
    try (var in = FakeWorkerServer.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IOException("no test resource " + name);
      }
      return in.readAllBytes();
    }
  }

  private static void handle(Map<String, Function<Map<String, String>, Answer>> handlers, SocketChannel ch)
      throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    ByteBuffer one = ByteBuffer.allocate(1);
    while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      one.clear();
      if (ch.read(one) < 0 || head.size() > 8192) {
        return;
      }
      head.write(one.array()[0]);
    }
    String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
    String[] requestLine = lines[0].split(" ");
    if (requestLine.length != 3 || !requestLine[2].startsWith("HTTP/1.")) {
      respond(ch, Answer.text(400, "bad request"));
      return;
    }
    for (String line : lines) {
      if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
        // An empty body is all the handlers take; read and forget any other.
        ByteBuffer body = ByteBuffer.allocate(Integer.parseInt(line.substring(line.indexOf(':') + 1).trim()));
        while (body.hasRemaining() && ch.read(body) >= 0) {
          // Reading.
        }
      }
    }
    String method = requestLine[0];
    String target = requestLine[1];
    int q = target.indexOf('?');
    String path = q < 0 ? target : target.substring(0, q);
    Map<String, String> params = new LinkedHashMap<>();
    if (q >= 0) {
      for (String kv : target.substring(q + 1).split("&")) {
        int eq = kv.indexOf('=');
        params.put(URLDecoder.decode(eq < 0 ? kv : kv.substring(0, eq), StandardCharsets.UTF_8),
            eq < 0 ? "" : URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8));
      }
    }
    if (method.equals("GET") && path.equals("/")) {
      respond(ch, Answer.ok("text/html", ("<h1>torch.distributed.WorkerServer</h1><a href=\"/handler/\">Handler "
          + "names</a>").getBytes(StandardCharsets.UTF_8)));
    } else if (method.equals("GET") && path.equals("/handler/")) {
      String list = String.join(",", handlers.keySet().stream().map(h -> "\"" + h + "\"").toList());
      respond(ch, Answer.ok("application/json", ("[" + list + "]").getBytes(StandardCharsets.UTF_8)));
    } else if (method.equals("POST") && path.startsWith("/handler/") && path.length() > "/handler/".length()) {
      String name = path.substring("/handler/".length());
      Function<Map<String, String>, Answer> handler = handlers.get(name);
      respond(ch, handler == null ? Answer.text(404, "Handler " + name + " not found: Failed to find handler "
          + name) : handler.apply(params));
    } else {
      respond(ch, new Answer(404, "text/plain", new byte[0]));
    }
  }

  private static void respond(SocketChannel ch, Answer a) throws IOException {
    String reason = switch (a.status()) {
      case 200 -> "OK";
      case 400 -> "Bad Request";
      case 404 -> "Not Found";
      default -> "Internal Server Error";
    };
    byte[] head = ("HTTP/1.1 " + a.status() + " " + reason + "\r\nContent-Type: " + a.type() + "\r\nContent-Length: "
        + a.body().length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1);
    ByteBuffer out = ByteBuffer.allocate(head.length + a.body().length).put(head).put(a.body()).flip();
    while (out.hasRemaining()) {
      ch.write(out);
    }
  }
}
