package dev.frdiag.daemon.ports;

import dev.frdiag.daemon.settings.Connections;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.IdentityCipherSuiteFilter;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.OptionalSslHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLPeerUnverifiedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small HTTP/1.1 server, over TLS when given a context, that slow and idle clients cannot hold: connections are
 * read without blocking a thread, a request reaches the handler's threads only once whole, a connection that takes
 * longer than the header timeout to send one (its TLS handshake included) or stays idle past the idle timeout is
 * closed, and each client address may hold only its share of connections ({@link ConnectionGate}). Serves the
 * daemon's metrics port and its web view.
 *
 * <p>The JDK's {@code HttpServer}, which these ports used before, reads a request on its executor's threads with no
 * time limit: two connections sending half a request held both of the web view's threads (0 of 12 requests served
 * in 60 s).
 */
public final class HttpPort implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(HttpPort.class);
  /** The longest request line and request head read; longer ones are answered 431 and the connection closed. */
  static final int MAX_REQUEST_LINE = 4096;
  static final int MAX_HEAD_BYTES = 16 * 1024;
  /** These ports only read: a request body beyond this is refused. */
  static final int MAX_BODY_BYTES = 64 * 1024;
  /** Requests waiting for a handler thread, across connections; beyond this a request is answered 503. */
  static final int MAX_QUEUED = 256;
  /** Requests one connection may send ahead (HTTP pipelining) while an earlier one is answered. */
  static final int MAX_PIPELINED = 8;
  /** What a plaintext client of a TLS port is told, in plaintext, before the connection is closed. */
  static final String SPEAKS_TLS = "This port speaks TLS: use https://";

  /** What a client asked. */
  public record Request(String method, String rawPath, String rawQuery, Headers headers,
      String clientCertificateSubject) {
    /** The first value of a header, or null. */
    public String header(String name) {
      return headers.first(name);
    }
  }

  /** A request's headers, by case-insensitive name. */
  public interface Headers {
    /** The first value of {@code name}, or null. */
    String first(String name);

    /** Every value of {@code name}, possibly none. */
    List<String> all(String name);
  }

  /** What to answer: a status, a body and its type, and headers of the handler's own. */
  public record Response(int status, String contentType, byte[] body, Map<String, String> headers) {
    public Response {
      body = body.clone();
      headers = Map.copyOf(headers);
    }

    /** A text body in UTF-8. */
    public static Response text(int status, String contentType, String body) {
      return new Response(status, contentType, body.getBytes(StandardCharsets.UTF_8), Map.of());
    }

    /** This response with one more header. */
    public Response with(String name, String value) {
      Map<String, String> h = new java.util.HashMap<>(headers);
      h.put(name, value);
      return new Response(status, contentType, body, h);
    }
  }

  /** Answers one whole request; runs on the port's handler threads, never on the network's. */
  public interface Handler {
    Response answer(Request request) throws IOException;
  }

  private final String name;
  private final Handler handler;
  private final Connections limits;
  private final ConnectionGate gate;
  private final SslContext tls;
  private final EventLoopGroup network;
  private final ThreadPoolExecutor handlers;
  private final Channel listener;

  /**
   * Serves {@code handler} on {@code bind}:{@code port} (0 picks a free port).
   *
   * @param name what logs and threads call the port ("web", "metrics")
   * @param tls null for plaintext
   * @param requireClientCertificate whether TLS clients must present a certificate the context trusts
   * @param threads handler threads: a handler never waits on a client, so few are needed
   * @param refused told the reason of every connection turned away ({@link ConnectionGate})
   * @throws UncheckedIOException when the port cannot be bound
   */
  public HttpPort(String name, String bind, int port, SSLContext tls, boolean requireClientCertificate,
      Connections limits, int threads, Handler handler, java.util.function.Consumer<String> refused) {
    this.name = name;
    this.handler = handler;
    this.limits = limits;
    this.gate = new ConnectionGate(limits.maxPerClient(), limits.maxPerHttpPort(), refused);
    this.tls = tls == null ? null : new JdkSslContext(tls, false, null, IdentityCipherSuiteFilter.INSTANCE, null,
        requireClientCertificate ? ClientAuth.REQUIRE : ClientAuth.NONE, new String[] {"TLSv1.3", "TLSv1.2"},
        false);
    this.handlers = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(MAX_QUEUED), new DefaultThreadFactory("frdiag-" + name, true));
    // One thread reads and writes every connection of the port without blocking on any of them.
    this.network = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("frdiag-" + name + "-io", true),
        NioIoHandler.newFactory());
    try {
      listener = new ServerBootstrap().group(network).channel(NioServerSocketChannel.class)
          .option(ChannelOption.SO_BACKLOG, 1024)
          .childHandler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel ch) {
              connected(ch);
            }
          })
          .bind(new InetSocketAddress(InetAddress.getByName(bind), port)).syncUninterruptibly().channel();
    } catch (IOException | RuntimeException e) {
      network.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      handlers.shutdownNow();
      throw new UncheckedIOException("cannot serve the " + name + " port on " + bind + ":" + port + ": "
          + e.getMessage(), e instanceof IOException io ? io : new IOException(e));
    }
  }

  /** The bound port (the real one when started with port 0). */
  public int port() {
    return ((InetSocketAddress) listener.localAddress()).getPort();
  }

  /** The port's connections, as its bounds count them. */
  public ConnectionGate gate() {
    return gate;
  }

  @Override
  public void close() {
    listener.close().syncUninterruptibly();
    network.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    handlers.shutdownNow();
  }

  private void connected(SocketChannel ch) {
    InetAddress client = ch.remoteAddress().getAddress();
    if (!gate.admit(client)) {
      ch.close();
      return;
    }
    ch.closeFuture().addListener(f -> gate.release(client));
    ch.pipeline().addLast("deadline", new Deadline(limits));
    if (tls != null) {
      ch.pipeline().addLast("tls", new TlsOnly(tls));
    }
    ch.pipeline().addLast("http", new HttpServerCodec(MAX_REQUEST_LINE, MAX_HEAD_BYTES, 8192))
        .addLast("whole", new HttpObjectAggregator(MAX_BODY_BYTES))
        .addLast("requests", new Requests(client));
  }

  /**
   * Closes a connection that is too slow: one that has not sent a whole request within the header timeout of
   * connecting (its TLS handshake included) or of starting one, or that has sent nothing for the idle timeout since
   * its last answer. Runs on the connection's event loop, as every call into it does.
   */
  private static final class Deadline extends io.netty.channel.ChannelInboundHandlerAdapter {
    private final Connections limits;
    private ScheduledFuture<?> timer;
    /** Waiting for the next request to start (idle), to be whole (header), or for its answer (none). */
    private boolean idle;
    private boolean answering;

    Deadline(Connections limits) {
      this.limits = limits;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
      arm(ctx, limits.headerTimeout(), "send a whole request");
      super.channelActive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
      if (idle) {
        // The next request has started: it has the header timeout to arrive whole.
        idle = false;
        arm(ctx, limits.headerTimeout(), "send a whole request");
      }
      super.channelRead(ctx, msg);
    }

    /** A whole request arrived: no limit while it is answered. */
    void requestArrived() {
      answering = true;
      idle = false;
      cancel();
    }

    /** The answer went out and the connection stays open for another request. */
    void answered(ChannelHandlerContext ctx) {
      answering = false;
      idle = true;
      arm(ctx, limits.idleTimeout(), "ask again");
    }

    private void arm(ChannelHandlerContext ctx, java.time.Duration after, String what) {
      cancel();
      timer = ctx.executor().schedule(() -> {
        if (!answering) {
          log.debug("closing a connection from {} that did not {} within {} ms", ctx.channel().remoteAddress(),
              what, after.toMillis());
          ctx.close();
        }
      }, after.toNanos(), TimeUnit.NANOSECONDS);
    }

    private void cancel() {
      if (timer != null) {
        timer.cancel(false);
        timer = null;
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
      cancel();
      super.channelInactive(ctx);
    }
  }

  /** TLS for clients that speak it; a plaintext client is told, in plaintext, that the port speaks TLS. */
  private static final class TlsOnly extends OptionalSslHandler {
    TlsOnly(SslContext context) {
      super(context);
    }

    @Override
    protected ChannelHandler newNonSslHandler(ChannelHandlerContext ctx) {
      byte[] body = (SPEAKS_TLS + "\n").getBytes(StandardCharsets.US_ASCII);
      String head = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=us-ascii\r\nContent-Length: "
          + body.length + "\r\nConnection: close\r\n\r\n";
      ctx.writeAndFlush(Unpooled.wrappedBuffer(head.getBytes(StandardCharsets.US_ASCII), body))
          .addListener(ChannelFutureListener.CLOSE);
      return new Discard();
    }
  }

  /** Drops what a connection about to close still sends. */
  private static final class Discard extends io.netty.channel.ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      io.netty.util.ReferenceCountUtil.release(msg);
    }
  }

  /**
   * A connection's whole requests, answered one at a time and in order on the handler threads; the connection is not
   * read meanwhile, so a client cannot queue more than a few.
   */
  private final class Requests extends SimpleChannelInboundHandler<FullHttpRequest> {
    private final InetAddress client;
    private final ArrayDeque<FullHttpRequest> waiting = new ArrayDeque<>();
    private boolean busy;

    Requests(InetAddress client) {
      this.client = client;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
      ctx.pipeline().get(Deadline.class).requestArrived();
      if (busy) {
        if (waiting.size() >= MAX_PIPELINED) {
          ctx.close();
          return;
        }
        waiting.add(request.retain());
        return;
      }
      serve(ctx, request);
    }

    private void serve(ChannelHandlerContext ctx, FullHttpRequest request) {
      boolean keepAlive = HttpUtil.isKeepAlive(request);
      if (!request.decoderResult().isSuccess()) {
        boolean tooLong = request.decoderResult().cause() instanceof TooLongFrameException;
        write(ctx, Response.text(tooLong ? 431 : 400, "text/plain; charset=utf-8", tooLong
            ? "Request head too large.\n" : "Malformed request.\n"), false, false);
        return;
      }
      busy = true;
      ctx.channel().config().setAutoRead(false);
      Request asked = request(ctx, request);
      boolean head = request.method().equals(HttpMethod.HEAD);
      try {
        handlers.execute(() -> {
          Response r;
          try {
            r = handler.answer(asked);
          } catch (IOException | RuntimeException e) {
            log.warn("{} port: {} {} failed", name, asked.method(), asked.rawPath(), e);
            r = Response.text(500, "text/plain; charset=utf-8", "Internal error; the daemon's log says why.\n");
          }
          Response answer = r;
          ctx.executor().execute(() -> write(ctx, answer, keepAlive, head));
        });
      } catch (RejectedExecutionException e) {
        write(ctx, Response.text(503, "text/plain; charset=utf-8", "Busy; ask again shortly.\n")
            .with("Retry-After", "1"), false, head);
      }
    }

    private Request request(ChannelHandlerContext ctx, FullHttpRequest request) {
      QueryStringDecoder uri = new QueryStringDecoder(request.uri());
      io.netty.handler.codec.http.HttpHeaders h = request.headers().copy();
      Headers headers = new Headers() {
        @Override
        public String first(String headerName) {
          return h.get(headerName);
        }

        @Override
        public List<String> all(String headerName) {
          return h.getAll(headerName);
        }
      };
      return new Request(request.method().name(), uri.rawPath(), uri.rawQuery(), headers, certificateSubject(ctx));
    }

    private void write(ChannelHandlerContext ctx, Response r, boolean keepAlive, boolean head) {
      FullHttpResponse out = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(r.status()),
          head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(r.body()));
      r.headers().forEach((k, v) -> out.headers().set(k, v));
      out.headers().set(HttpHeaderNames.CONTENT_TYPE, r.contentType());
      HttpUtil.setContentLength(out, r.body().length);
      if (!keepAlive) {
        out.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      }
      ctx.writeAndFlush(out).addListener((ChannelFutureListener) f -> {
        if (!keepAlive || !f.isSuccess()) {
          ctx.close();
          return;
        }
        busy = false;
        FullHttpRequest next = waiting.poll();
        if (next != null) {
          try {
            serve(ctx, next);
          } finally {
            next.release();
          }
          return;
        }
        ctx.pipeline().get(Deadline.class).answered(ctx);
        ctx.channel().config().setAutoRead(true);
      });
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
      waiting.forEach(FullHttpRequest::release);
      waiting.clear();
      super.channelInactive(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      // A client that resets its connection or fails its TLS handshake: nothing to answer, nothing to log above debug.
      log.debug("{} port: connection from {} failed: {}", name, client, cause.toString());
      ctx.close();
    }
  }

  /** The subject of the client's TLS certificate (RFC 2253), or null without TLS or a certificate. */
  private static String certificateSubject(ChannelHandlerContext ctx) {
    SslHandler ssl = ctx.pipeline().get(SslHandler.class);
    if (ssl == null) {
      return null;
    }
    try {
      Certificate[] chain = ssl.engine().getSession().getPeerCertificates();
      return chain.length > 0 && chain[0] instanceof X509Certificate x ? x.getSubjectX500Principal().getName() : null;
    } catch (SSLPeerUnverifiedException e) {
      return null;
    }
  }
}
