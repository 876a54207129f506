package dev.frdiag.testing.sim;

import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.ContextAck;
import dev.frdiag.proto.v1.NicBinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.context.ContextFindings;
import dev.frdiag.readers.ib.IbPortId;
import dev.frdiag.readers.ib.IbPortSnapshot;
import dev.frdiag.readers.ib.IbSnapshot;
import dev.frdiag.readers.ib.IbWindow;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The simulated job's node agents: each host posts which GPU each of its ranks runs on and which NIC port it uses
 * (GPU {@code i} on {@code mlx5_i} port 1, as on the common eight-GPU, eight-NIC nodes), and, when the fabric
 * fault strikes, the faulty rank's host posts the InfiniBand counter window of its port going down, classified by
 * the same readers the real agent uses. Posting is best effort, as an agent's is: a refused post is logged.
 */
final class SimulatedNodes {
  private static final Logger log = LoggerFactory.getLogger(SimulatedNodes.class);
  private static final Duration POST_TIMEOUT = Duration.ofSeconds(5);
  /** The counter window the faulty host reports: the agent's usual lookback. */
  private static final Duration WINDOW = Duration.ofSeconds(30);

  private final Topology topology;
  private final String jobId;
  /** Each host's ranks, in rank order: one pass over the world, not one per host. */
  private final Map<String, List<Integer>> ranksByHost = new TreeMap<>();
  private final CollectorGrpc.CollectorStub stub;
  /** Done when every host's layout post has been answered; later posts go after it, so none is overwritten. */
  private final CompletableFuture<Void> layoutPosted;

  /**
   * Starts posting every host's GPUs and NIC ports, with no findings, as agents do when a job starts; does not
   * wait for the daemon.
   */
  SimulatedNodes(Topology topology, String jobId, Channel channel) {
    this.topology = topology;
    this.jobId = jobId;
    this.stub = CollectorGrpc.newStub(channel);
    for (int rank = 0; rank < topology.worldSize(); rank++) {
      ranksByHost.computeIfAbsent(topology.hostOf(rank), h -> new ArrayList<>()).add(rank);
    }
    List<CompletableFuture<Void>> posts = new ArrayList<>();
    for (String host : ranksByHost.keySet()) {
      posts.add(post(layout(host).build()));
    }
    layoutPosted = CompletableFuture.allOf(posts.toArray(CompletableFuture[]::new));
  }

  /** The faulty rank's host reports its NIC port's link going down, with the counters that say so. */
  void postLinkDown(int rank) {
    String host = topology.hostOf(rank);
    IbPortId broken = port(topology.localRankOf(rank));
    Instant now = Instant.now();
    Map<IbPortId, IbPortSnapshot> before = new TreeMap<>();
    Map<IbPortId, IbPortSnapshot> after = new TreeMap<>();
    for (int local = 0; local < ranksByHost.get(host).size(); local++) {
      IbPortId id = port(local);
      before.put(id, snapshot(id, true, 0, 0, 1_000_000L));
      after.put(id, id.equals(broken) ? snapshot(id, false, 1, 4_812, 1_000_000L)
          : snapshot(id, true, 0, 0, 91_000_000L));
    }
    IbWindow window = IbWindow.between(new IbSnapshot(now.minus(WINDOW), Path.of("/sys/class/infiniband"),
        new TreeMap<>(before), List.of()), new IbSnapshot(now, Path.of("/sys/class/infiniband"),
        new TreeMap<>(after), List.of()));
    log.info("fault: {} reports {} down in its InfiniBand counters", host, broken);
    NodeContext node = layout(host).addAllFindings(ContextFindings.fromIb(window, host)).build();
    layoutPosted.whenComplete((done, failed) -> post(node));
  }

  private NodeContext.Builder layout(String host) {
    NodeContext.Builder node = NodeContext.newBuilder().setJobId(jobId).setHostname(host)
        .setObservedAtNs(System.currentTimeMillis() * 1_000_000L);
    for (int rank : ranksByHost.get(host)) {
      int local = topology.localRankOf(rank);
      IbPortId port = port(local);
      node.addNics(NicBinding.newBuilder().setRank(rank).setCudaDevice(local)
          .setGpuBusId(String.format("%02x000", 0x18 + 0x10 * local)).setNic(port.device()).setPort(port.port()))
          .addRanks(rank);
    }
    return node;
  }

  private static IbPortId port(int local) {
    return new IbPortId("mlx5_" + local, 1);
  }

  private static IbPortSnapshot snapshot(IbPortId id, boolean up, long linkDowned, long symbolErrors, long data) {
    return new IbPortSnapshot(id, up ? "4: ACTIVE" : "1: DOWN", up ? "5: LinkUp" : "3: Disabled",
        "400 Gb/sec (4X NDR)", "InfiniBand", Map.of("link_downed", linkDowned, "symbol_error", symbolErrors,
            "port_xmit_data", data, "port_rcv_data", data, "port_xmit_wait", 0L), Map.of(), false, List.of());
  }

  /** Posts {@code node}; the future completes (never exceptionally) once the daemon answered or the post failed. */
  private CompletableFuture<Void> post(NodeContext node) {
    CompletableFuture<Void> answered = new CompletableFuture<>();
    stub.withDeadlineAfter(POST_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).reportContext(node,
        new StreamObserver<ContextAck>() {
          @Override
          public void onNext(ContextAck ack) {}

          @Override
          public void onError(Throwable t) {
            log.warn("{}: the daemon refused its node context: {}", node.getHostname(), Status.fromThrowable(t));
            answered.complete(null);
          }

          @Override
          public void onCompleted() {
            answered.complete(null);
          }
        });
    return answered;
  }
}
