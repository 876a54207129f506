package dev.frdiag.bench;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.testing.sim.ProcessGroupSpec;
import dev.frdiag.testing.sim.Topology;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Prints how long the watchdog's pass over one healthy job takes ({@code Job.incidentTrigger}), for jobs of
 * growing size: every rank connected, in its groups of the simulator's topology (world, tensor-, pipeline-,
 * data-parallel), each with a heartbeat. The pass holds the job's lock, so while it runs no heartbeat or record of
 * the job is taken in. Usage: {@code java -cp bench/target/frdiag-bench.jar dev.frdiag.bench.WatchdogBench
 * [ranks,...] [passes]}.
 */
public final class WatchdogBench {
  private WatchdogBench() {}

  public static void main(String[] args) {
    int[] sizes = args.length > 0 ? Arrays.stream(args[0].split(",")).mapToInt(Integer::parseInt).toArray()
        : new int[] {1024, 4096, 16384};
    int passes = args.length > 1 ? Integer.parseInt(args[1]) : 15;
    System.out.printf("%8s %8s %14s %14s%n", "ranks", "groups", "median ms", "min ms");
    for (int ranks : sizes) {
      Job job = connectedJob(ranks);
      long[] took = new long[passes];
      Duration stall = Duration.ofSeconds(10);
      for (int i = 0; i < passes; i++) {
        long start = System.nanoTime();
        if (job.incident().openIfDue(2_000_000_000L, 0, stall, Duration.ofMinutes(1), Duration.ofSeconds(5)) != null) {
          throw new IllegalStateException("the healthy job opened an incident");
        }
        took[i] = System.nanoTime() - start;
      }
      Arrays.sort(took);
      System.out.printf("%8d %8d %14.2f %14.2f%n", ranks, topology(ranks).groups().size(), took[passes / 2] / 1e6,
          took[0] / 1e6);
    }
  }

  /** fr-sim's shape: 8 ranks per host, tensor-parallel 4, 2 pipeline stages, the rest data-parallel. */
  private static Topology topology(int ranks) {
    return Topology.builder().worldSize(ranks).build();
  }

  /**
   * A job of {@code ranks} ranks in fr-sim's topology, all connected (session "s" + rank) and heard from, none with
   * outstanding work.
   */
  static Job connectedJob(int ranks) {
    Topology topology = topology(ranks);
    Job job = new JobRegistry(512).getOrCreate("bench", ranks, 0, 0);
    // Every group in wire form as a rank's Hello carries it, from one recorder that knows them all.
    FlightRecorder recorder = FlightRecorder.withDefaults();
    topology.groups().forEach(g -> recorder.registerProcessGroup(g.name(), g.desc(), g.ranks()));
    Map<String, ProcessGroup> protos = new HashMap<>();
    recorder.processGroups().forEach(g -> protos.put(g.getName(), g));
    for (int rank = 0; rank < ranks; rank++) {
      List<ProcessGroup> groups = new ArrayList<>();
      List<ProcessGroupProgress> progress = new ArrayList<>();
      for (ProcessGroupSpec g : topology.groupsOf(rank)) {
        groups.add(protos.get(g.name()));
        progress.add(ProcessGroupProgress.newBuilder().setProcessGroup(g.name()).setLastEnqueuedSeq(40)
            .setLastStartedSeq(40).setLastCompletedSeq(40).build());
      }
      String session = "s" + rank;
      job.attach(RankIdentity.newBuilder().setJobId("bench").setGlobalRank(rank).setWorldSize(ranks)
          .setHostname(topology.hostOf(rank)).setPid(rank).build(), groups, request -> { }, session, 0, 1_000L, 0);
      job.heartbeat(rank, session, progress, 0, 0, false, 1_000_000_000L, 1_000);
    }
    return job;
  }
}
