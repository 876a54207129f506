package dev.frdiag.daemon;

import dev.frdiag.daemon.settings.DaemonSettings;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.util.concurrent.TimeUnit;

/** A started daemon served in-process, and a channel to it; closing stops both. */
public final class InProcessDaemon implements AutoCloseable {
  private final Daemon daemon;
  private final ManagedChannel channel;

  public InProcessDaemon(DaemonSettings settings) {
    String name = InProcessServerBuilder.generateName();
    this.daemon = new Daemon(settings, InProcessServerBuilder.forName(name)).start();
    this.channel = InProcessChannelBuilder.forName(name).build();
  }

  public Daemon daemon() {
    return daemon;
  }

  public ManagedChannel channel() {
    return channel;
  }

  @Override
  public void close() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    daemon.close();
  }
}
