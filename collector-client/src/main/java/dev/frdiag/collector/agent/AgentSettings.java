package dev.frdiag.collector.agent;

import dev.frdiag.collector.reporter.ReporterSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * What a node agent watches and where it reports. Build with {@link #builder()}; every value is validated.
 *
 * @param jobId the job the node's ranks belong to
 * @param hostname this node's name as the ranks print it
 * @param worldSize ranks in the job
 * @param localRanks global ranks running on this node
 * @param dumpPrefix PyTorch's dump file prefix (TORCH_FR_DUMP_TEMP_FILE); rank r dumps to prefix + r
 * @param pipePrefix TORCH_NCCL_DEBUG_INFO_PIPE_FILE; rank r listens on prefix + r + ".pipe"; null when unset
 * @param logFiles training logs (and NCCL_DEBUG_FILE logs) to tail for watchdog lines
 * @param pollInterval how often files are looked at (default 1 s)
 * @param dumpWait how long a triggered rank may take to write its dump (default 15 s, PyTorch's own default)
 * @param stream how the agent's streams to the daemon behave
 */
public record AgentSettings(String jobId, String hostname, int worldSize, List<Integer> localRanks,
    Path dumpPrefix, Path pipePrefix, List<Path> logFiles, Duration pollInterval, Duration dumpWait,
    ReporterSettings stream) {

  /** PyTorch's default dump prefix: {@code $HOME/.cache/torch/comm_lib_trace_rank_}. */
  public static Path defaultDumpPrefix() {
    return Path.of(System.getProperty("user.home"), ".cache", "torch", "comm_lib_trace_rank_");
  }

  public AgentSettings {
    Objects.requireNonNull(jobId, "jobId");
    Objects.requireNonNull(hostname, "hostname");
    Objects.requireNonNull(dumpPrefix, "dumpPrefix");
    Objects.requireNonNull(pollInterval, "pollInterval");
    Objects.requireNonNull(dumpWait, "dumpWait");
    Objects.requireNonNull(stream, "stream");
    localRanks = List.copyOf(localRanks);
    logFiles = List.copyOf(logFiles);
    if (jobId.isEmpty()) {
      throw new IllegalArgumentException("jobId is required");
    }
    if (worldSize < 1) {
      throw new IllegalArgumentException("worldSize must be at least 1, got " + worldSize);
    }
    if (localRanks.isEmpty()) {
      throw new IllegalArgumentException("at least one local rank is required");
    }
    for (int r : localRanks) {
      if (r < 0 || r >= worldSize) {
        throw new IllegalArgumentException("local rank " + r + " is outside world size " + worldSize);
      }
    }
    if (pollInterval.isNegative() || pollInterval.isZero()) {
      throw new IllegalArgumentException("pollInterval must be positive, got " + pollInterval);
    }
    if (dumpWait.isNegative() || dumpWait.isZero()) {
      throw new IllegalArgumentException("dumpWait must be positive, got " + dumpWait);
    }
  }

  /** Where rank {@code rank} writes its dump. */
  public Path dumpFile(int rank) {
    return dumpPrefix.resolveSibling(dumpPrefix.getFileName() + Integer.toString(rank));
  }

  /** The pipe rank {@code rank} listens on, or null when pipes are not configured. */
  public Path pipe(int rank) {
    return pipePrefix == null ? null : pipePrefix.resolveSibling(pipePrefix.getFileName() + Integer.toString(rank)
        + ".pipe");
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder for {@link AgentSettings}. */
  public static final class Builder {
    private String jobId = "";
    private String hostname = localHostname();
    private int worldSize;
    private List<Integer> localRanks = List.of();
    private Path dumpPrefix = defaultDumpPrefix();
    private Path pipePrefix;
    private List<Path> logFiles = List.of();
    private Duration pollInterval = Duration.ofSeconds(1);
    private Duration dumpWait = Duration.ofSeconds(15);
    private ReporterSettings stream = ReporterSettings.defaults();

    public Builder jobId(String v) {
      jobId = v;
      return this;
    }

    public Builder hostname(String v) {
      hostname = v;
      return this;
    }

    public Builder worldSize(int v) {
      worldSize = v;
      return this;
    }

    public Builder localRanks(List<Integer> v) {
      localRanks = v;
      return this;
    }

    public Builder dumpPrefix(Path v) {
      dumpPrefix = v;
      return this;
    }

    public Builder pipePrefix(Path v) {
      pipePrefix = v;
      return this;
    }

    public Builder logFiles(List<Path> v) {
      logFiles = v;
      return this;
    }

    public Builder pollInterval(Duration v) {
      pollInterval = v;
      return this;
    }

    public Builder dumpWait(Duration v) {
      dumpWait = v;
      return this;
    }

    public Builder stream(ReporterSettings v) {
      stream = v;
      return this;
    }

    public AgentSettings build() {
      return new AgentSettings(jobId, hostname, worldSize, localRanks, dumpPrefix, pipePrefix, logFiles,
          pollInterval, dumpWait, stream);
    }

    private static String localHostname() {
      try {
        String name = java.net.InetAddress.getLocalHost().getHostName();
        int dot = name.indexOf('.');
        // NCCL prints the host name cut at the first dot; match it so the two join.
        return dot > 0 ? name.substring(0, dot) : name;
      } catch (java.net.UnknownHostException e) {
        return "localhost";
      }
    }
  }
}
