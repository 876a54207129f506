package dev.frdiag.demo;

import dev.frdiag.cli.ExitCode;
import dev.frdiag.command.CommandRunner;
import dev.frdiag.command.DurationConverter;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.ReportText;
import dev.frdiag.testing.incidents.IncidentWatch;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * {@code fr-demo}: an embedded daemon, simulated ranks streaming to it over real gRPC on loopback, an injected
 * hang, and the diagnosis the daemon writes for it.
 */
@Command(name = "fr-demo", mixinStandardHelpOptions = true,
    description = {"Starts a daemon on 127.0.0.1 (free port, temporary data dir), runs simulated training ranks "
        + "that report to it over gRPC, injects a fault and prints the diagnosis the daemon writes.",
        "Progress goes to stderr, the diagnosis to stdout."},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {"0:a diagnosis was printed", "2:usage error", "5:no diagnosis within --timeout"})
public final class FrDemo implements Callable<Integer> {
  @CommandLine.Mixin
  SimulatedJob simulated;

  @Option(names = "--stall-timeout", converter = DurationConverter.class,
      description = "No progress for this long opens an incident (default 2s, longer for over 1,024 ranks, "
          + "since they share 2 cores with the daemon).")
  Duration stallTimeout;

  @Option(names = "--timeout", defaultValue = "120s", converter = DurationConverter.class,
      description = "Give up when no diagnosis arrives within this (default ${DEFAULT-VALUE}).")
  Duration timeout;

  @Option(names = "--data-dir", description = "Keep reports here (default: a temporary directory, removed at exit).")
  Path dataDir;

  @Option(names = "--json", description = "Print the frdiag.report/v1 JSON instead of text.")
  boolean json;

  @Option(names = "--web-port", defaultValue = "0", description = "Port of the report's web page on 127.0.0.1 "
      + "(default: a free one; -1: no page).")
  int webPort;

  @Option(names = "--serve", description = "Keep serving the report's page after the diagnosis, until Ctrl-C.")
  boolean serve;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    // The demo narrates on stderr itself; the embedded daemon's own log lines would only interleave with it.
    if (System.getProperty("frdiag.log.level") == null) {
      System.setProperty("frdiag.log.level", "ERROR");
    }
    System.exit(run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
  }

  /** Runs the demo with the diagnosis on {@code out} and progress on {@code err}; returns the exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    return CommandRunner.of(new FrDemo()).output(out, err).failures(ExitCode.FAILURE).execute(args);
  }

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    int ranks = simulated.ranks;
    if (stallTimeout == null) {
      stallTimeout = Duration.ofSeconds(Math.max(2, ranks / 512));
    }
    if (simulated.fault == FaultOption.NONE) {
      throw new IllegalArgumentException("fr-demo needs a fault to diagnose; run a healthy job against a daemon "
          + "with fr-sim --fault none");
    }
    Topology topology = simulated.topology();
    Fault injected = simulated.injected();
    boolean tempDir = dataDir == null;
    Path dir = tempDir ? Files.createTempDirectory("frdiag-demo-") : dataDir;
    String job = "demo";
    long began = System.nanoTime();
    int ring = simulated.ringCapacity();
    DaemonSettings settings = DaemonSettings.builder().port(0).bindAddress("127.0.0.1").dataDir(dir)
        // Thousands of simulated ranks share 2 cores with the daemon: heartbeats can lag by seconds.
        .stallTimeout(stallTimeout).heartbeatTimeout(Duration.ofSeconds(Math.max(10, ranks / 64)))
        .snapshotDeadline(Duration.ofSeconds(Math.max(3, ranks / 128))).heartbeatInterval(Duration.ofMillis(500))
        .window(Math.min(ring, 512)).webPort(webPort)
        // A straggler shows within seconds of simulated steps; a real job's daemon looks every 10 s.
        .stragglerInterval(Duration.ofSeconds(2)).build();
    try (Daemon daemon = new Daemon(settings).start()) {
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", daemon.port()).usePlaintext()
          .maxInboundMessageSize(64 * 1024 * 1024).build();
      try {
        BlockingQueue<ReportEnvelope> reports = IncidentWatch.of(channel, job);
        err.printf("[demo] daemon listening on 127.0.0.1:%d, reports in %s%n", daemon.port(), dir);
        err.printf("[demo] %d simulated ranks on %d hosts (tp=%d, pp=%d, dp=%d), stall timeout %s%n", ranks,
            topology.hostCount(), topology.tensorParallel(), topology.pipelineStages(), topology.dataParallel(),
            human(stallTimeout));
        err.printf("[demo] injecting %s%s%n", simulated.injection(), simulated.fault == FaultOption.SLOW
            ? " (" + simulated.delay.toMillis() + " ms late every step)" : "");
        err.flush();
        try (RankSimulator sim = simulated.builder(topology, injected, job).channel(channel).build()) {
          long connecting = System.nanoTime();
          if (!sim.awaitConnected(timeout)) {
            err.printf("fr-demo: not every simulated rank could connect to the daemon within %s%n", human(timeout));
            return ExitCode.FAILURE;
          }
          err.printf("[demo] %d ranks connected in %.1f s; training%n", ranks, (System.nanoTime() - connecting) / 1e9);
          err.flush();
          sim.start();
          ReportEnvelope envelope = reports.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
          if (envelope == null) {
            err.printf("fr-demo: no diagnosis within %s (simulated steps completed: %d)%n", human(timeout),
                sim.stepsCompleted());
            return ExitCode.FAILURE;
          }
          Report report = ReportJson.read(envelope.getReportJson());
          err.printf("[demo] %s after step %d; report %s written %.1f s after start (stored in %s)%n%n",
              simulated.fault == FaultOption.SLOW ? "straggler" : "stall", sim.stepsCompleted(), report.reportId(),
              (System.nanoTime() - began) / 1e9,
              daemon.store().pathOf(report));
          err.flush();
          out.print(json ? ReportJson.write(report) + "\n" : ReportText.plain(report));
          out.flush();
          String page = daemon.pageOf(report).orElse(null);
          if (page != null) {
            err.printf("%n[demo] report page: %s%s%n", page, serve ? " (serving until Ctrl-C)"
                : " (served while the demo runs; add --serve to keep it up)");
            err.flush();
          }
          if (serve && page != null) {
            sim.close();
            new CountDownLatch(1).await();
          }
          return ExitCode.NO_HANG;
        }
      } finally {
        channel.shutdownNow();
      }
    } finally {
      if (tempDir) {
        deleteRecursively(dir);
      }
    }
  }

  private static String human(Duration d) {
    return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
  }

  private static void deleteRecursively(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // A temporary directory left behind is harmless.
    }
  }
}
