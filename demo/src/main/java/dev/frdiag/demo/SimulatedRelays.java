package dev.frdiag.demo;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import dev.frdiag.agent.relay.InProcessRelay;
import dev.frdiag.testing.sim.Topology;
import io.grpc.Channel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * One node relay per simulated host, so the daemon sees one stream per host as it does behind real node agents.
 * The relays share one flush thread.
 */
final class SimulatedRelays implements AutoCloseable {
  private final Topology topology;
  private final List<InProcessRelay> relays = new ArrayList<>();
  private final ScheduledExecutorService flushes = Executors.newSingleThreadScheduledExecutor(
      new ThreadFactoryBuilder().setNameFormat("fr-sim-relay-flush").setDaemon(true).build());

  /**
   * @param daemon the daemon's channel, which every relay's node stream shares
   * @param maxMessageBytes largest rank message a relay passes on
   */
  SimulatedRelays(Topology topology, Channel daemon, int maxMessageBytes) {
    this.topology = topology;
    try {
      for (int host = 0; host < topology.hostCount(); host++) {
        relays.add(InProcessRelay.start(daemon, topology.hostOf(host * topology.ranksPerHost()), flushes,
            maxMessageBytes));
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** The channel of {@code rank}'s host relay. */
  Channel channelFor(int rank) {
    return relays.get(rank / topology.ranksPerHost()).channel();
  }

  @Override
  public void close() {
    relays.forEach(InProcessRelay::close);
    flushes.shutdownNow();
  }
}
