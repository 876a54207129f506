package dev.frdiag.agent;

import dev.frdiag.collector.reporter.ReporterSettings;
import dev.frdiag.proto.Contract;
import dev.frdiag.readers.pytorch.DumpReader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * What a node agent watches and where it reports. Build with {@link #builder()}; every value is validated.
 *
 * <p>The prefixes are strings, not paths, because PyTorch builds the file names by appending to them:
 * {@code /tmp/dumps/} names rank 3's dump {@code /tmp/dumps/3}, and {@code /tmp/trace_} names it
 * {@code /tmp/trace_3}.
 *
 * @param jobId the job the node's ranks belong to
 * @param hostname this node's name as the ranks print it
 * @param worldSize ranks in the job; 0 when {@code discoverRanks} and the ranks' WORLD_SIZE is to be used
 * @param localRanks global ranks running on this node, distinct; empty when {@code discoverRanks}
 * @param discoverRanks find the node's ranks in its process table and follow them as they start and restart,
 *     instead of {@code localRanks}
 * @param runId with {@code discoverRanks}, only processes whose TORCHELASTIC_RUN_ID is this are ranks; null for
 *     any
 * @param dumpPrefix PyTorch's dump file prefix (TORCH_FR_DUMP_TEMP_FILE); rank r dumps to prefix + r
 * @param pipePrefix TORCH_NCCL_DEBUG_INFO_PIPE_FILE; rank r listens on prefix + r + ".pipe"; null when unset
 * @param logFiles training logs to tail for watchdog lines
 * @param pollInterval how often files are looked at (default 1 s)
 * @param dumpWait how long a triggered rank may take to write its dump (default 15 s, PyTorch's own default);
 *     the agent answers sooner when the daemon's request has a shorter deadline
 * @param maxDumpBytes dump files larger than this are not read (default 64 MiB; real dumps are KB to MB)
 * @param stream how the agent's streams to the daemon behave
 * @param workerSocket where rank r's PyTorch worker server listens (TORCH_WORKER_SERVER_SOCKET), the pattern with
 *     {@value #RANK_PLACEHOLDER} replaced by r; null when the job runs none
 * @param progressInterval how often each rank's worker server is asked for its progress (default 5 s)
 * @param pipeDumpInterval how often a rank whose worker server does not answer is made to dump through its debug
 *     pipe, for its progress; null for never (the default): each such dump is a full dump written to disk
 */
public record AgentSettings(String jobId, String hostname, int worldSize, List<Integer> localRanks,
    boolean discoverRanks, String runId, String dumpPrefix, String pipePrefix, List<Path> logFiles,
    Duration pollInterval, Duration dumpWait, long maxDumpBytes, ReporterSettings stream, String workerSocket,
    Duration progressInterval, Duration pipeDumpInterval) {

  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);
  public static final Duration DEFAULT_DUMP_WAIT = Duration.ofSeconds(15);
  public static final long DEFAULT_MAX_DUMP_BYTES = 64L << 20;
  public static final Duration DEFAULT_PROGRESS_INTERVAL = Duration.ofSeconds(5);
  /** Stands for the global rank in {@link #workerSocket()}. */
  public static final String RANK_PLACEHOLDER = "{rank}";
  /** PyTorch's default dump prefix: {@code $HOME/.cache/torch/comm_lib_trace_rank_}. */
  public static String defaultDumpPrefix() {
    return Path.of(System.getProperty("user.home"), ".cache", "torch", DumpReader.DEFAULT_PREFIX).toString();
  }

  public AgentSettings {
    Objects.requireNonNull(jobId, "jobId");
    Objects.requireNonNull(hostname, "hostname");
    Objects.requireNonNull(dumpPrefix, "dumpPrefix");
    Objects.requireNonNull(pollInterval, "pollInterval");
    Objects.requireNonNull(dumpWait, "dumpWait");
    Objects.requireNonNull(stream, "stream");
    Objects.requireNonNull(progressInterval, "progressInterval");
    localRanks = List.copyOf(Objects.requireNonNull(localRanks, "localRanks"));
    logFiles = List.copyOf(Objects.requireNonNull(logFiles, "logFiles"));
    if (!Contract.JOB_ID.matcher(jobId).matches()) {
      throw new IllegalArgumentException(jobId.isEmpty() ? "a job id is required"
          : "invalid job id '" + jobId + "': " + Contract.JOB_ID_RULE);
    }
    if (hostname.isEmpty()) {
      throw new IllegalArgumentException("hostname must not be empty");
    }
    if (worldSize < 1 && !(discoverRanks && worldSize == 0)) {
      throw new IllegalArgumentException("world size must be at least 1, got " + worldSize);
    }
    if (discoverRanks && !localRanks.isEmpty()) {
      throw new IllegalArgumentException("local ranks are either listed or discovered, not both");
    }
    if (localRanks.isEmpty() && !discoverRanks) {
      throw new IllegalArgumentException("at least one local rank is required");
    }
    if (runId != null && runId.isEmpty()) {
      runId = null;
    }
    Set<Integer> seen = new HashSet<>();
    for (int r : localRanks) {
      if (r < 0 || r >= worldSize) {
        throw new IllegalArgumentException("local rank " + r + " is outside world size " + worldSize
            + " (ranks 0-" + (worldSize - 1) + ")");
      }
      if (!seen.add(r)) {
        throw new IllegalArgumentException("local rank " + r + " is listed twice");
      }
    }
    if (dumpPrefix.isEmpty()) {
      throw new IllegalArgumentException("dump prefix must not be empty");
    }
    if (pipePrefix != null && pipePrefix.isEmpty()) {
      pipePrefix = null;
    }
    if (pollInterval.isNegative() || pollInterval.isZero()) {
      throw new IllegalArgumentException("poll interval must be positive, got " + pollInterval);
    }
    if (dumpWait.isNegative() || dumpWait.isZero()) {
      throw new IllegalArgumentException("dump wait must be positive, got " + dumpWait);
    }
    if (workerSocket != null && workerSocket.isEmpty()) {
      workerSocket = null;
    }
    if (workerSocket != null && !workerSocket.contains(RANK_PLACEHOLDER)) {
      throw new IllegalArgumentException("worker socket '" + workerSocket + "' must contain " + RANK_PLACEHOLDER
          + ": each rank serves its own socket, such as /tmp/torch_worker_" + RANK_PLACEHOLDER + ".sock");
    }
    if (progressInterval.isNegative() || progressInterval.isZero()) {
      throw new IllegalArgumentException("progress interval must be positive, got " + progressInterval);
    }
    if (pipeDumpInterval != null && (pipeDumpInterval.isNegative() || pipeDumpInterval.isZero())) {
      pipeDumpInterval = null;
    }
    if (maxDumpBytes < 1 || maxDumpBytes > DumpReader.MAX_FILE_BYTES_LIMIT) {
      throw new IllegalArgumentException("max dump bytes must be within 1.." + DumpReader.MAX_FILE_BYTES_LIMIT
          + ", got " + maxDumpBytes);
    }
  }

  /** These settings for a job of {@code size} ranks: a discovered rank's WORLD_SIZE when none was given. */
  AgentSettings withWorldSize(int size) {
    return new AgentSettings(jobId, hostname, size, localRanks, discoverRanks, runId, dumpPrefix, pipePrefix,
        logFiles, pollInterval, dumpWait, maxDumpBytes, stream, workerSocket, progressInterval, pipeDumpInterval);
  }

  /** Where rank {@code rank} writes its dump: the prefix with the rank appended, as PyTorch names it. */
  public Path dumpFile(int rank) {
    return Path.of(dumpPrefix + rank);
  }

  /** The pipe rank {@code rank} listens on, or null when pipes are not configured. */
  public Path pipe(int rank) {
    return pipePrefix == null ? null : Path.of(pipePrefix + rank + ".pipe");
  }

  /** The socket rank {@code rank}'s worker server listens on, or null when the job runs none. */
  public Path workerSocket(int rank) {
    return workerSocket == null ? null : Path.of(workerSocket.replace(RANK_PLACEHOLDER, Integer.toString(rank)));
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builder for {@link AgentSettings}, starting from the documented defaults. */
  public static final class Builder {
    private String jobId = "";
    private String hostname;
    private int worldSize;
    private List<Integer> localRanks = List.of();
    private boolean discoverRanks;
    private String runId;
    private String dumpPrefix;
    private String pipePrefix;
    private List<Path> logFiles = List.of();
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private Duration dumpWait = DEFAULT_DUMP_WAIT;
    private long maxDumpBytes = DEFAULT_MAX_DUMP_BYTES;
    private ReporterSettings stream = ReporterSettings.defaults();
    private String workerSocket;
    private Duration progressInterval = DEFAULT_PROGRESS_INTERVAL;
    private Duration pipeDumpInterval;

    private Builder() {}

    public Builder jobId(String v) {
      jobId = v;
      return this;
    }

    /** Defaults to this machine's host name cut at the first dot, as NCCL prints it. */
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

    /** Find the node's ranks in its process table instead of a list; world size 0 then means "their WORLD_SIZE". */
    public Builder discoverRanks(boolean v) {
      discoverRanks = v;
      return this;
    }

    /** With {@link #discoverRanks}, only the workers of this torchrun run id (TORCHELASTIC_RUN_ID); null for any. */
    public Builder runId(String v) {
      runId = v;
      return this;
    }

    /** Defaults to {@link #defaultDumpPrefix()}. */
    public Builder dumpPrefix(String v) {
      dumpPrefix = v;
      return this;
    }

    /** Null or empty when the job has no debug pipes. */
    public Builder pipePrefix(String v) {
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

    public Builder maxDumpBytes(long v) {
      maxDumpBytes = v;
      return this;
    }

    public Builder stream(ReporterSettings v) {
      stream = v;
      return this;
    }

    /** A pattern with {@value AgentSettings#RANK_PLACEHOLDER}; null or empty when the job runs no worker server. */
    public Builder workerSocket(String v) {
      workerSocket = v;
      return this;
    }

    public Builder progressInterval(Duration v) {
      progressInterval = v;
      return this;
    }

    /** Null or zero for never, the default. */
    public Builder pipeDumpInterval(Duration v) {
      pipeDumpInterval = v;
      return this;
    }

    /** @throws IllegalArgumentException naming the first invalid value */
    public AgentSettings build() {
      // Looked up only when needed: a slow resolver must not delay a builder whose host name is given.
      return new AgentSettings(jobId, hostname == null ? localHostname() : hostname, worldSize, localRanks,
          discoverRanks, runId, dumpPrefix == null ? defaultDumpPrefix() : dumpPrefix, pipePrefix, logFiles,
          pollInterval, dumpWait, maxDumpBytes, stream, workerSocket, progressInterval, pipeDumpInterval);
    }

    static String localHostname() {
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
