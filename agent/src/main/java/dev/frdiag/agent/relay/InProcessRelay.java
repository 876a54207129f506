package dev.frdiag.agent.relay;

import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A {@link NodeRelay} served inside this process: ranks in the same JVM (the agent's, or simulated ones) reach it
 * through {@link #channel()} as they would reach the daemon, without a socket.
 */
public final class InProcessRelay implements AutoCloseable {
  private final NodeRelay relay;
  private final Server server;
  private final ManagedChannel channel;

  private InProcessRelay(NodeRelay relay, Server server, ManagedChannel channel) {
    this.relay = relay;
    this.server = server;
    this.channel = channel;
  }

  /**
   * Starts a relay for {@code node} whose node stream goes to {@code daemon}.
   *
   * @param flushes runs the relay's batch flushes; may be shared by many relays
   */
  public static InProcessRelay start(Channel daemon, String node, ScheduledExecutorService flushes,
      int maxMessageBytes) {
    NodeRelay relay = new NodeRelay(daemon, node, flushes, NodeRelay.DEFAULT_FLUSH_DELAY, maxMessageBytes);
    // Unique per relay: several in one JVM (a simulation's hosts, tests) must not reach each other.
    String name = InProcessServerBuilder.generateName();
    Server server;
    try {
      // Direct executors: the relay's handlers only queue frames or hand a message on, never block.
      server = InProcessServerBuilder.forName(name).directExecutor().addService(relay).build().start();
    } catch (IOException e) {
      throw new UncheckedIOException("could not start the node relay of " + node, e);
    }
    return new InProcessRelay(relay, server, InProcessChannelBuilder.forName(name).directExecutor().build());
  }

  /** What this process's ranks use in place of the daemon's channel. */
  public Channel channel() {
    return channel;
  }

  /** Bytes the relay holds for the daemon. */
  long pendingBytes() {
    return relay.pendingBytes();
  }

  /** Rank streams open on the relay's current node stream. */
  public int rankStreams() {
    return relay.rankStreams();
  }

  /**
   * Sends what the ranks have sent so far, then ends the node stream and the relay: a rank that said goodbye is
   * finished for the daemon, any other lost.
   */
  @Override
  public void close() {
    relay.finish();
    channel.shutdownNow();
    server.shutdownNow();
    try {
      server.awaitTermination(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
