package dev.frdiag.daemon.ports;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Counts one port's open connections by client address and turns away those over the bounds: a client that opens
 * connections without end takes at most its share, and the port its total. Thread-safe.
 */
public final class ConnectionGate {
  /** Why a connection was turned away, as metrics label it. */
  public static final String PER_CLIENT = "per_client";
  public static final String PORT_FULL = "port_full";

  private final int maxPerClient;
  private final int maxOpen;
  private final Consumer<String> refused;
  private final Object lock = new Object();
  @GuardedBy("lock")
  private final Map<InetAddress, Integer> byClient = new HashMap<>();
  @GuardedBy("lock")
  private int open;

  /**
   * @param maxOpen connections the port holds at once; {@link Integer#MAX_VALUE} for no bound but the clients'
   * @param refused told the reason of every connection turned away ({@link #PER_CLIENT}, {@link #PORT_FULL})
   */
  public ConnectionGate(int maxPerClient, int maxOpen, Consumer<String> refused) {
    if (maxPerClient < 1 || maxOpen < maxPerClient) {
      throw new IllegalArgumentException("need 1 <= maxPerClient <= maxOpen, got " + maxPerClient + " and " + maxOpen);
    }
    this.maxPerClient = maxPerClient;
    this.maxOpen = maxOpen;
    this.refused = refused;
  }

  /** Counts a new connection from {@code client}; false, counted nowhere, when it is over a bound. */
  public boolean admit(InetAddress client) {
    String reason;
    synchronized (lock) {
      int mine = byClient.getOrDefault(client, 0);
      if (mine < maxPerClient && open < maxOpen) {
        byClient.put(client, mine + 1);
        open++;
        return true;
      }
      reason = mine >= maxPerClient ? PER_CLIENT : PORT_FULL;
    }
    refused.accept(reason);
    return false;
  }

  /** A connection {@link #admit} counted has closed. */
  public void release(InetAddress client) {
    synchronized (lock) {
      Integer mine = byClient.get(client);
      if (mine == null) {
        return;
      }
      if (mine == 1) {
        byClient.remove(client);
      } else {
        byClient.put(client, mine - 1);
      }
      open--;
    }
  }

  /** Connections open now. */
  public int open() {
    synchronized (lock) {
      return open;
    }
  }
}
