package dev.frdiag.demo;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import java.time.Duration;

/** How a simulated job of a given size is shaped and paced, so that thousands of ranks fit on one machine. */
final class SimulatedJob {
  private SimulatedJob() {}

  /** Tensor-parallel 4 (or a host's worth), two pipeline stages when there are ranks enough, the rest data-parallel. */
  static Topology topology(int ranks, int ranksPerHost) {
    int tensorParallel = Math.min(4, ranksPerHost);
    return Topology.builder().worldSize(ranks).ranksPerHost(ranksPerHost).tensorParallel(tensorParallel)
        .pipelineStages(ranks >= 2 * tensorParallel ? 2 : 1).build();
  }

  /** Large simulations keep smaller rings so thousands of ranks fit in one JVM. */
  static int ringCapacity(int ranks) {
    return ranks > 512 ? 256 : FlightRecorder.DEFAULT_CAPACITY;
  }

  /** A simulator for the job, paced for its size, playing its hosts' node agents too; the caller adds the channel. */
  static RankSimulator.Builder builder(Topology topology, Fault fault, String jobId) {
    int ranks = topology.worldSize();
    // Thousands of ranks share the machine's cores: they step as fast as they can and batch their reports.
    return RankSimulator.builder().topology(topology).fault(fault).jobId(jobId).nodeAgents(true)
        .recorderCapacity(ringCapacity(ranks)).stepInterval(Duration.ofMillis(ranks > 512 ? 0 : 20))
        .reporterSettings(ReporterSettings.builder().heartbeatInterval(Duration.ofMillis(ranks > 1024 ? 1000 : 500))
            .helloTimeout(Duration.ofSeconds(ranks > 512 ? 60 : 5))
            .maxBatchDelay(Duration.ofMillis(ranks > 1024 ? 500 : ranks > 512 ? 250 : 50)).build());
  }
}
