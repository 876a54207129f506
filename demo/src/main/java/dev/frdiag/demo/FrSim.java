package dev.frdiag.demo;

import dev.frdiag.cli.DaemonAddress;
import dev.frdiag.cli.ExitCode;
import dev.frdiag.command.ClientSecurity;
import dev.frdiag.command.CommandRunner;
import dev.frdiag.command.DurationConverter;
import dev.frdiag.proto.Contract;
import dev.frdiag.proto.MessageLimits;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import io.grpc.ManagedChannel;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code fr-sim}: simulated training ranks that stream to a daemon running elsewhere, with an injected fault, so
 * the cluster service can be tried in three terminals (daemon, ranks, {@code fr-diagnose}).
 */
@Command(name = "fr-sim", mixinStandardHelpOptions = true,
    description = {"Runs N simulated training ranks that report to an frdiag daemon over gRPC, and injects a fault.",
        "The ranks keep running (hung, once the fault hits) until Ctrl-C or --duration; ask the daemon with "
            + "fr-diagnose meanwhile. Progress goes to stderr."},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {"0:ran until stopped", "2:usage error", "3:the daemon could not be reached", "5:other failure"})
public final class FrSim implements Callable<Integer> {
  @Option(names = "--daemon", paramLabel = "HOST:PORT", converter = DaemonAddress.Converter.class,
      defaultValue = Contract.DEFAULT_DAEMON, description = "The daemon to report to (default ${DEFAULT-VALUE}).")
  DaemonAddress daemon;

  @Option(names = "--job", defaultValue = "sim", description = "Job id the ranks report as (default ${DEFAULT-VALUE}).")
  String job;

  @CommandLine.Mixin
  SimulatedJob simulated;

  @Option(names = "--step-interval", converter = DurationConverter.class, description = "Time between a rank's "
      + "training steps, such as 1s for a real job's pace (default: 20ms up to 512 ranks; above, as fast as the "
      + "machine allows).")
  Duration stepInterval;

  @Option(names = "--fan-in", description = "Carry each simulated host's ranks on one node stream to the daemon, "
      + "through a node relay per host, rather than one stream per rank.")
  boolean fanIn;

  @Option(names = "--connect-timeout", defaultValue = "60s", converter = DurationConverter.class,
      description = "Give up when the ranks cannot all connect within this (default ${DEFAULT-VALUE}).")
  Duration connectTimeout;

  @Option(names = "--duration", converter = DurationConverter.class,
      description = "Stop after this long (default: run until Ctrl-C).")
  Duration duration;

  @CommandLine.Mixin
  ClientSecurity security;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  /** Set when the simulation should end early (Ctrl-C); counted down by the shutdown hook or a test. */
  private final CountDownLatch stop = new CountDownLatch(1);

  public static void main(String[] args) {
    if (System.getProperty("frdiag.log.level") == null) {
      System.setProperty("frdiag.log.level", "ERROR");
    }
    FrSim sim = new FrSim();
    Runtime.getRuntime().addShutdownHook(new Thread(sim::requestStop, "fr-sim-stop"));
    System.exit(run(sim, args, new PrintWriter(System.err, true)));
  }

  /** Runs {@code sim} with progress on {@code err}; returns the exit code. */
  static int run(FrSim sim, String[] args, PrintWriter err) {
    return CommandRunner.of(sim).output(err, err).failures(ExitCode.FAILURE).execute(args);
  }

  /** Ends a running simulation: its ranks say goodbye and the command returns. */
  void requestStop() {
    stop.countDown();
  }

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter err = spec.commandLine().getErr();
    if (duration != null && (duration.isNegative() || duration.isZero())) {
      throw new IllegalArgumentException("--duration must be positive, got " + duration);
    }
    Topology topology = simulated.topology();
    ManagedChannel channel = daemon.open(security);
    RankSimulator.Builder builder = simulated.builder(topology, simulated.injected(), job).channel(channel);
    if (stepInterval != null) {
      builder.stepInterval(stepInterval);
    }
    SimulatedRelays relays = fanIn
        ? new SimulatedRelays(topology, channel, MessageLimits.DEFAULT_MAX_MESSAGE_BYTES) : null;
    if (relays != null) {
      builder.rankChannels(relays::channelFor);
    }
    try (relays; RankSimulator sim = builder.build()) {
      err.printf("[sim] %d simulated ranks on %d hosts (tp=%d, pp=%d, dp=%d) reporting to %s as job %s%s%n",
          simulated.ranks,
          topology.hostCount(), topology.tensorParallel(), topology.pipelineStages(), topology.dataParallel(),
          daemon, job, fanIn ? ", one node stream per host" : "");
      err.flush();
      if (!sim.awaitConnected(connectTimeout)) {
        err.printf("fr-sim: not every rank could connect to the daemon at %s within %s%n", daemon,
            connectTimeout.toSeconds() + "s");
        return ExitCode.UNREACHABLE_OR_UNKNOWN;
      }
      err.printf("[sim] connected; training, %s%n", simulated.fault == FaultOption.NONE ? "no fault injected"
          : "injecting " + simulated.injection());
      err.flush();
      sim.start();
      long deadline = duration == null ? Long.MAX_VALUE : System.nanoTime() + duration.toNanos();
      boolean told = false;
      while (System.nanoTime() < deadline) {
        long wait = Math.min(TimeUnit.SECONDS.toNanos(1), deadline - System.nanoTime());
        if (stop.await(Math.max(wait, 0), TimeUnit.NANOSECONDS)) {
          break;
        }
        if (!told && sim.isStalled()) {
          told = true;
          err.printf("[sim] the job hangs after step %d; ask the daemon: fr-diagnose --daemon %s %s%n",
              sim.stepsCompleted(), daemon, job);
          err.flush();
        }
      }
      err.printf("[sim] stopping after %d steps%n", sim.stepsCompleted());
      err.flush();
      return ExitCode.NO_HANG;
    } finally {
      channel.shutdownNow();
    }
  }
}
