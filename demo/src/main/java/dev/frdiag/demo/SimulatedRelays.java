package dev.frdiag.demo;

import dev.frdiag.agent.relay.NodeRelay;
import dev.frdiag.testing.sim.Topology;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One node relay per simulated host, each served in-process, so the daemon sees one stream per host as it does
 * behind real node agents. The relays share one flush thread; their rank streams share the in-process transport.
 */
final class SimulatedRelays implements AutoCloseable {
  private final Topology topology;
  private final List<Server> servers = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final ScheduledExecutorService flushes = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "fr-sim-relay-flush");
    t.setDaemon(true);
    return t;
  });

  /**
   * @param daemon the daemon's channel, which every relay's node stream shares
   * @param maxMessageBytes largest rank message a relay passes on
   */
  SimulatedRelays(Topology topology, Channel daemon, int maxMessageBytes) {
    this.topology = topology;
    // Unique per process: two simulations in one JVM (tests) must not reach each other's relays.
    String prefix = "fr-sim-relay-" + System.identityHashCode(this) + "-";
    try {
      for (int host = 0; host < topology.hostCount(); host++) {
        String name = topology.hostOf(host * topology.ranksPerHost());
        NodeRelay relay = new NodeRelay(daemon, name, flushes, NodeRelay.DEFAULT_FLUSH_DELAY, maxMessageBytes);
        servers.add(InProcessServerBuilder.forName(prefix + host).directExecutor().addService(relay).build()
            .start());
        channels.add(InProcessChannelBuilder.forName(prefix + host).directExecutor().build());
      }
    } catch (IOException e) {
      close();
      throw new UncheckedIOException("could not start the simulated hosts' relays", e);
    }
  }

  /** The channel of {@code rank}'s host relay. */
  Channel channelFor(int rank) {
    return channels.get(rank / topology.ranksPerHost());
  }

  @Override
  public void close() {
    for (ManagedChannel c : channels) {
      c.shutdownNow();
    }
    for (Server s : servers) {
      s.shutdownNow();
    }
    flushes.shutdownNow();
    try {
      for (Server s : servers) {
        s.awaitTermination(1, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
