package dev.frdiag.demo;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.command.DurationConverter;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.FaultKind;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The simulated job fr-demo and fr-sim run, as both take it on the command line (a picocli mixin): its size, its
 * hosts and the fault it is given; and how a job of that size is shaped and paced, so that thousands of ranks fit
 * on one machine.
 */
final class SimulatedJob {
  @Option(names = "--ranks", defaultValue = "16", description = "Simulated ranks (default ${DEFAULT-VALUE}).")
  int ranks;

  @Option(names = "--ranks-per-host", defaultValue = "8", description = "Ranks per host (default ${DEFAULT-VALUE}).")
  int ranksPerHost;

  @Option(names = "--fault", paramLabel = "KIND", converter = FaultOption.Converter.class, defaultValue = "gpu-stall",
      description = FaultOption.CHOICES + " (default ${DEFAULT-VALUE}).")
  FaultOption fault;

  @Option(names = "--rank", defaultValue = "5", description = "The faulty rank; for a fabric fault, the rank whose "
      + "link fails (default ${DEFAULT-VALUE}).")
  int rank;

  @Option(names = "--at-step", defaultValue = "10", description = "Training step the fault hits (default ${DEFAULT-VALUE}).")
  long atStep;

  @Option(names = "--delay", defaultValue = "30ms", converter = DurationConverter.class,
      description = "With --fault slow: how late the rank issues each step (default ${DEFAULT-VALUE}).")
  Duration delay;

  /**
   * Tensor-parallel 4 (or a host's worth), two pipeline stages when there are ranks enough, the rest data-parallel.
   *
   * @throws IllegalArgumentException if the sizes do not make a job or the faulty rank is outside it
   */
  Topology topology() {
    int tensorParallel = Math.min(4, ranksPerHost);
    Topology topology = Topology.builder().worldSize(ranks).ranksPerHost(ranksPerHost).tensorParallel(tensorParallel)
        .pipelineStages(ranks >= 2 * tensorParallel ? 2 : 1).build();
    topology.checkRank(rank);
    return topology;
  }

  /** The fault to inject, {@link Fault#none()} for {@code --fault none}. */
  Fault injected() {
    return fault.at(rank, atStep, delay);
  }

  /** Where and when the fault hits, as the progress lines say it: "gpu-stall on rank 5 at step 10". */
  String injection() {
    return fault.spelling + (fault.kind == FaultKind.FABRIC ? " on the link of rank " : " on rank ") + rank
        + " at step " + atStep;
  }

  /** Large simulations keep smaller rings so thousands of ranks fit in one JVM. */
  int ringCapacity() {
    return ranks > 512 ? 256 : FlightRecorder.DEFAULT_CAPACITY;
  }

  /** A simulator for the job, paced for its size, playing its hosts' node agents too; the caller adds the channel. */
  RankSimulator.Builder builder(Topology topology, Fault injected, String jobId) {
    // Thousands of ranks share the machine's cores: they step as fast as they can and batch their reports.
    return RankSimulator.builder().topology(topology).fault(injected).jobId(jobId).nodeAgents(true)
        .recorderCapacity(ringCapacity()).stepInterval(Duration.ofMillis(ranks > 512 ? 0 : 20))
        .reporterSettings(ReporterSettings.builder().heartbeatInterval(Duration.ofMillis(ranks > 1024 ? 1000 : 500))
            .helloTimeout(Duration.ofSeconds(ranks > 512 ? 60 : 5))
            .maxBatchDelay(Duration.ofMillis(ranks > 1024 ? 500 : ranks > 512 ? 250 : 50)).build());
  }
}
