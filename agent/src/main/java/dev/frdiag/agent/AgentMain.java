package dev.frdiag.agent;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import dev.frdiag.agent.probe.NodeProbe;
import dev.frdiag.agent.probe.NodeProbes;
import dev.frdiag.agent.relay.InProcessRelay;
import dev.frdiag.command.ClientSecurity;
import dev.frdiag.command.CommandRunner;
import dev.frdiag.command.ConfigFile;
import dev.frdiag.command.LogFormat;
import dev.frdiag.command.DurationConverter;
import dev.frdiag.proto.Contract;
import dev.frdiag.proto.MessageLimits;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code fr-agent}: runs a {@link NodeAgent} for the PyTorch ranks of this node until SIGTERM/SIGINT. */
@Command(name = "fr-agent", mixinStandardHelpOptions = true,
    sortOptions = false, usageHelpAutoWidth = true,
    description = {"Speaks to the frdiag daemon for the unmodified PyTorch ranks of this node: ships their Flight "
        + "Recorder dumps, writes their debug pipes when the daemon asks for fresh dumps, forwards the "
        + "watchdog lines of their training logs, and, with --worker-socket, sends their live progress so the "
        + "daemon's stall timeout applies.",
        "",
        "Every option can also be set in a --config file, one key=value per line, the key being the option's "
        + "name without dashes (world-size=16, local-ranks=8-15, log=/logs/a.log,/logs/b.log). Options on the "
        + "command line override the file. A leading ~/ in a path is the home directory.",
        ""},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {"1:unexpected failure",
        "2:usage error: a missing or bad option or config value",
        "143:stopped by SIGTERM (130: SIGINT) after a clean close: goodbye sent for every rank"})
public final class AgentMain implements Callable<Integer> {
  @Option(names = "--job", paramLabel = "ID", description = "Job id, the same on every node of the job "
      + "(required; letters, digits, . _ -).")
  String job;

  @CommandLine.Mixin
  ClientSecurity security;

  @Option(names = "--daemon", paramLabel = "HOST:PORT", defaultValue = Contract.DEFAULT_DAEMON,
      description = "Daemon to report to (default ${DEFAULT-VALUE}).")
  String daemon;

  @Option(names = "--fan-in", description = "Carry all of this node's rank streams on one node stream to the daemon "
      + "(a large job's daemon then holds one stream per node rather than one per rank).")
  boolean fanIn;

  @Option(names = "--world-size", paramLabel = "N", description = "Ranks in the job (required unless "
      + "--local-ranks auto, which takes the ranks' WORLD_SIZE).")
  Integer worldSize;

  @Option(names = "--local-ranks", paramLabel = "RANKS", converter = RankListConverter.class,
      description = {"Global ranks running on this node, ranges and lists: 0-7, 8-15 or 0,2,4-6 (required).",
          "auto: find them in /proc from the environment torchrun gives its workers (RANK, LOCAL_RANK, "
          + "WORLD_SIZE, TORCHELASTIC_RUN_ID), and follow ranks that start late or restart. The agent must run "
          + "as the job's user (or root) and see its processes (same PID namespace)."})
  RankListConverter.RankList localRanks;

  @Option(names = "--run-id", paramLabel = "ID",
      description = "With --local-ranks auto: only the workers of this torchrun --rdzv-id (TORCHELASTIC_RUN_ID), "
          + "when the node runs several jobs (default: any).")
  String runId;

  @Option(names = "--hostname", paramLabel = "NAME",
      description = "This node's name as NCCL prints it (default: the host name up to its first dot).")
  String hostname;

  @Option(names = "--dump-prefix", paramLabel = "PREFIX", defaultValue = "~/.cache/torch/comm_lib_trace_rank_",
      description = {"The job's TORCH_FR_DUMP_TEMP_FILE (alias TORCH_NCCL_DEBUG_INFO_TEMP_FILE): rank r dumps to "
          + "PREFIX<r>; PyTorch's default when the agent runs as the job's user.", "Default: ${DEFAULT-VALUE}"})
  String dumpPrefix;

  @Option(names = "--pipe-prefix", paramLabel = "PREFIX",
      description = "The job's TORCH_NCCL_DEBUG_INFO_PIPE_FILE: rank r reads PREFIX<r>.pipe. Without it the agent "
          + "cannot ask ranks for fresh dumps and uses only those they write on their own (default: none).")
  String pipePrefix;

  @Option(names = "--worker-socket", paramLabel = "PATTERN",
      description = "The job's TORCH_WORKER_SERVER_SOCKET with {rank} for the global rank, such as "
          + "/tmp/torch_worker_{rank}.sock: each rank's PyTorch worker server (2.4+, training script under "
          + "torch.distributed.elastic.control_plane.worker_main) is asked which handlers it has, then for its "
          + "Flight Recorder (fr_trace_json, dump_nccl_trace_json) every --progress-interval, so the daemon's stall "
          + "timeout applies to the job, and for its ring and Python stacks when the daemon investigates (default: "
          + "none).")
  String workerSocket;

  @Option(names = "--progress-interval", paramLabel = "DURATION", defaultValue = "5s",
      converter = DurationConverter.class,
      description = "How often each rank's worker server is asked for its progress; one small request, no stack "
          + "traces (default ${DEFAULT-VALUE}).")
  Duration progressInterval;

  @Option(names = "--pipe-dump-interval", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "For a rank whose worker server does not answer (or without --worker-socket): make it dump "
          + "through its debug pipe this often and take its progress from the dump. Each time costs the rank a full "
          + "Flight Recorder dump, stack traces included, written to disk; use minutes rather than seconds "
          + "(default: off).")
  Duration pipeDumpInterval;

  @Option(names = "--log", paramLabel = "FILE", split = ",",
      description = "A training log to follow for PyTorch watchdog lines; repeat the option or separate files "
          + "with commas (default: none).")
  List<String> logs = new ArrayList<>();

  @Option(names = "--poll-interval", paramLabel = "DURATION", defaultValue = "1s",
      converter = DurationConverter.class,
      description = "How often dump files and logs are looked at: 500ms, 1s, 2m (default ${DEFAULT-VALUE}).")
  Duration pollInterval;

  @Option(names = "--dump-wait", paramLabel = "DURATION", defaultValue = "15s",
      converter = DurationConverter.class,
      description = "How long a rank may take to dump after its pipe is written; shortened to fit the daemon's "
          + "own deadline (default ${DEFAULT-VALUE}, PyTorch's TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC).")
  Duration dumpWait;

  @Option(names = "--ib-root", paramLabel = "DIR", defaultValue = "/sys/class/infiniband",
      description = "InfiniBand sysfs root whose port counters are read (default ${DEFAULT-VALUE}; ignored when "
          + "missing).")
  Path ibRoot;

  @Option(names = "--nccl-log", paramLabel = "FILE", split = ",",
      description = "NCCL_DEBUG_FILE log of a local rank, parsed when the daemon investigates (repeatable).")
  List<Path> ncclLogs = new ArrayList<>();

  @Option(names = "--node-probes", paramLabel = "PROBES", split = ",",
      defaultValue = "dmesg,ncclras,nvidia-smi=nvidia-smi -q",
      description = "Commands run on this node for evidence, in the background every minute and again when the "
          + "daemon investigates: the kernel log's Xid lines, NCCL RAS reports, the GPUs' memory health (pending "
          + "row remaps, uncorrectable ECC). NAME runs that program, "
          + "NAME=COMMAND ARGS runs a command; 'none' for no probe. A probe not installed is skipped "
          + "(default: ${DEFAULT-VALUE}).")
  List<String> nodeProbes = new ArrayList<>();

  @Option(names = "--probe-timeout", paramLabel = "DURATION", defaultValue = "5s",
      converter = DurationConverter.class, description = "How long one probe may run before it is stopped "
          + "(default: ${DEFAULT-VALUE}).")
  Duration probeTimeout;

  @Option(names = LogFormat.OPTION, paramLabel = "text|json", description = "Log lines as key=value text or one "
      + "JSON object per line (default ${DEFAULT-VALUE}).")
  String logFormat = "text";

  @Option(names = "--config", paramLabel = "FILE",
      description = "A key=value file with any of the options above; command-line options win.")
  String config;

  /** Where the values of options not on the command line came from, for error messages; null without one. */
  private ConfigFile configRead;

  public static void main(String[] args) {
    // Picked before the first logger exists.
    LogFormat.configure("logback-agent", args);
    System.exit(run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
  }

  /**
   * Parses {@code args} and runs the agent until the JVM shuts down; returns the exit code of a failed start.
   * Errors are one line on {@code err}.
   */
  static int run(String[] args, PrintWriter out, PrintWriter err) {
    return runner(new AgentMain()).output(out, err).execute(args);
  }

  /** Only the agent's own checks are usage errors: any other exception is a failure, said with its class. */
  private static CommandRunner runner(AgentMain main) {
    return CommandRunner.of(main).readConfigFile(file -> main.configRead = file).usageErrors(UsageException.class)
        .helpHintInline().failures(1, Object::toString);
  }

  /**
   * The settings {@code args} describe, with their config file, without starting anything.
   *
   * @throws IllegalArgumentException with the one-line message the command prints
   */
  static AgentSettings parse(String... args) {
    AgentMain main = new AgentMain();
    try {
      runner(main).parse(args);
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage());
    }
    return main.settings();
  }

  /** Where to find the daemon, from {@code --daemon}. */
  static String[] daemonAddress(String value) {
    String v = value.trim();
    int colon = v.lastIndexOf(':');
    if (v.isEmpty() || colon == 0) {
      throw new UsageException("--daemon '" + value + "' is not host:port (e.g. " + Contract.DEFAULT_DAEMON + ")");
    }
    if (colon < 0 || v.endsWith("]")) {
      return new String[] {v.replace("[", "").replace("]", ""), Integer.toString(Contract.DEFAULT_PORT)};
    }
    String port = v.substring(colon + 1);
    if (!port.matches("\\d{1,5}") || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65_535) {
      throw new UsageException("--daemon '" + value + "' is not host:port (e.g. " + Contract.DEFAULT_DAEMON + ")");
    }
    return new String[] {v.substring(0, colon).replace("[", "").replace("]", ""), port};
  }

  @Override
  public Integer call() throws InterruptedException {
    AgentSettings settings = settings();
    String[] address = daemonAddress(daemon);
    ManagedChannel channel = NettyChannelBuilder.forAddress(address[0], Integer.parseInt(address[1]),
            security.credentials())
        // Notices a daemon host that vanished without closing the connection (the daemon permits 10 s).
        .keepAliveTime(30, TimeUnit.SECONDS).keepAliveTimeout(10, TimeUnit.SECONDS)
        .build();
    // What this node's counters and NCCL logs say reaches the daemon whenever it investigates.
    List<NodeProbe> probes = nodeProbes.stream().map(String::strip).filter(p -> !p.isEmpty() && !p.equals("none"))
        .map(NodeProbe::parse).toList();
    NodeContextCollector context = new NodeContextCollector(
        ibRoot != null && Files.isDirectory(ibRoot) ? ibRoot : null, ncclLogs, Duration.ofMinutes(1),
        probes.isEmpty() ? null : new NodeProbes(probes, probeTimeout));
    ScheduledExecutorService flushes = fanIn ? Executors.newSingleThreadScheduledExecutor(
        new ThreadFactoryBuilder().setNameFormat("frdiag-agent-relay").setDaemon(true).build()) : null;
    InProcessRelay relay = fanIn ? InProcessRelay.start(channel, settings.hostname(), flushes,
        MessageLimits.DEFAULT_MAX_MESSAGE_BYTES) : null;
    NodeAgent agent = new NodeAgent(settings, relay == null ? channel : relay.channel(), context);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        agent.close();
        if (relay != null) {
          // After the goodbyes: they go out with the relay's last batch, before its node stream ends.
          relay.close();
          flushes.shutdown();
        }
        channel.shutdown();
        if (!channel.awaitTermination(2, TimeUnit.SECONDS)) {
          channel.shutdownNow();
        }
      } catch (InterruptedException e) {
        channel.shutdownNow();
        Thread.currentThread().interrupt();
      } finally {
        stopped.countDown();
      }
    }, "frdiag-agent-shutdown"));
    stopped.await();
    return 0;
  }

  /** Validated settings from the parsed options. */
  AgentSettings settings() {
    if (job == null) {
      throw new UsageException(missing("--job"));
    }
    if (worldSize == null && (localRanks == null || !localRanks.auto())) {
      throw new UsageException(missing("--world-size"));
    }
    if (localRanks == null) {
      throw new UsageException(missing("--local-ranks"));
    }
    if (runId != null && !localRanks.auto()) {
      throw new UsageException("--run-id needs --local-ranks auto");
    }
    daemonAddress(daemon);
    try {
      return AgentSettings.builder().jobId(job).worldSize(worldSize == null ? 0 : worldSize)
          .localRanks(localRanks.ranks()).discoverRanks(localRanks.auto()).runId(runId)
          .hostname(hostname).dumpPrefix(home(dumpPrefix)).pipePrefix(pipePrefix == null ? null : home(pipePrefix))
          .logFiles(logs.stream().filter(l -> !l.isBlank()).map(l -> Path.of(home(l.trim()))).toList())
          .pollInterval(pollInterval).dumpWait(dumpWait)
          .workerSocket(workerSocket == null ? null : home(workerSocket)).progressInterval(progressInterval)
          .pipeDumpInterval(pipeDumpInterval).build();
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage());
    }
  }

  private String missing(String option) {
    return "missing " + option + (configRead == null ? "" : " (not on the command line nor in " + configRead.file()
        + ")");
  }

  /** Expands a leading {@code ~/}, which shells do not do inside --opt=~/x or config files. */
  static String home(String path) {
    return ConfigFile.home(path);
  }

  /** A problem with the command line or the config file; its message is printed as is. */
  static final class UsageException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }
}
