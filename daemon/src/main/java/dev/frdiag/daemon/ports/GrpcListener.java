package dev.frdiag.daemon.ports;

import dev.frdiag.daemon.settings.Connections;
import dev.frdiag.proto.Contract;
import io.grpc.netty.NettyServerBuilder;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gRPC port's listening side: it accepts connections through a {@link ConnectionGate}, gives each the header
 * timeout to start speaking HTTP/2 (to finish its TLS handshake, over TLS), closes connections idle for the idle
 * timeout, and answers a plaintext client of a TLS port, in the HTTP/2 it speaks, that the port speaks TLS.
 */
public final class GrpcListener implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(GrpcListener.class);
  /** What every HTTP/2 client sends first, gRPC's included (RFC 9113 §3.4). */
  static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  private final ConnectionGate gate;
  private final Connections limits;
  private final boolean tls;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;

  /** @param tls whether the port speaks TLS: then a client sending HTTP/2 in plaintext is told so */
  public GrpcListener(ConnectionGate gate, Connections limits, boolean tls) {
    this.gate = gate;
    this.limits = limits;
    this.tls = tls;
    this.boss = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("frdiag-grpc-accept", true),
        NioIoHandler.newFactory());
    // As many as gRPC's own default: two per core.
    this.workers = new MultiThreadIoEventLoopGroup(0, new DefaultThreadFactory("frdiag-grpc-io", true),
        NioIoHandler.newFactory());
  }

  /** The port's connections, as its bounds count them. */
  public ConnectionGate gate() {
    return gate;
  }

  /** {@code builder} listening through this listener, with its timeouts. */
  public NettyServerBuilder applyTo(NettyServerBuilder builder) {
    return builder.channelFactory(GatedChannel::new).bossEventLoopGroup(boss).workerEventLoopGroup(workers)
        // Over TLS the handshake is the transport's negotiation, which gRPC times itself.
        .handshakeTimeout(limits.headerTimeout().toMillis(), TimeUnit.MILLISECONDS)
        .maxConnectionIdle(limits.idleTimeout().toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Stops the listener's threads; after the server using it has terminated. */
  @Override
  public void close() {
    boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
  }

  /** A listening socket whose accepted connections go through the gate before gRPC sees them. */
  private final class GatedChannel extends NioServerSocketChannel {
    @Override
    protected int doReadMessages(List<Object> accepted) throws Exception {
      int before = accepted.size();
      int read = super.doReadMessages(accepted);
      for (int i = accepted.size() - 1; i >= before; i--) {
        Channel child = (Channel) accepted.get(i);
        InetAddress client = ((InetSocketAddress) child.remoteAddress()).getAddress();
        if (gate.admit(client)) {
          child.closeFuture().addListener(f -> gate.release(client));
          // First in the pipeline, ahead of what gRPC adds when it takes the connection.
          child.pipeline().addFirst("frdiag-preface", new Preface());
        } else {
          accepted.remove(i);
          child.unsafe().closeForcibly();
        }
      }
      return read;
    }
  }

  /**
   * Watches a connection's first bytes: plaintext must bring the whole HTTP/2 preface within the header timeout; a
   * plaintext preface on a TLS port is handed to {@link SpeaksTls}. Leaves the pipeline once it has seen enough.
   */
  private final class Preface extends ChannelInboundHandlerAdapter {
    private int seen;
    private ScheduledFuture<?> timer;

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
      timer = ctx.executor().schedule(() -> {
        log.debug("closing a connection from {} that did not start HTTP/2 within {} ms",
            ctx.channel().remoteAddress(), limits.headerTimeout().toMillis());
        ctx.channel().close();
      }, limits.headerTimeout().toNanos(), TimeUnit.NANOSECONDS);
      super.channelActive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
      if (!(msg instanceof ByteBuf in)) {
        super.channelRead(ctx, msg);
        return;
      }
      if (tls && seen == 0 && in.isReadable() && in.getByte(in.readerIndex()) == PREFACE[0]) {
        // A TLS record starts with 20-23; 'P' is a plaintext HTTP/2 client. gRPC's own handlers, further on, never
        // see its bytes: an HTTP/2 codec of ours answers its calls, and the connection closes at the header timeout.
        ctx.pipeline().addAfter(ctx.name(), "frdiag-plaintext", Http2FrameCodecBuilder.forServer().build())
            .addAfter("frdiag-plaintext", "frdiag-speaks-tls", new SpeaksTls());
        ctx.pipeline().remove(this);
        ctx.fireChannelRead(msg);
        return;
      }
      seen += in.readableBytes();
      if (tls || seen >= PREFACE.length) {
        // Over TLS gRPC's handshake timeout takes over; in plaintext the preface came, the rest is gRPC's.
        cancel();
        ctx.pipeline().remove(this);
      }
      super.channelRead(ctx, msg);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
      cancel();
      super.channelInactive(ctx);
    }

    private void cancel() {
      if (timer != null) {
        timer.cancel(false);
        timer = null;
      }
    }
  }

  /**
   * Answers every call of a plaintext client on a TLS port with UNAVAILABLE and {@link Contract#SPEAKS_TLS}: a gRPC
   * client reports that as the call's error, where a closed connection would only be "cannot reach the daemon".
   */
  private static final class SpeaksTls extends ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      try {
        if (msg instanceof Http2HeadersFrame call && call.stream() != null) {
          Http2Headers trailers = new DefaultHttp2Headers().status("200").set("content-type", "application/grpc")
              .set("grpc-status", "14").set("grpc-message", Contract.SPEAKS_TLS);
          ctx.writeAndFlush(new DefaultHttp2HeadersFrame(trailers, true).stream(call.stream()));
        }
      } finally {
        ReferenceCountUtil.release(msg);
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }
  }
}
