package dev.frdiag.agent;

import dev.frdiag.agent.probe.NodeProbes;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NicBinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.context.ContextFindings;
import dev.frdiag.readers.ib.IbSnapshot;
import dev.frdiag.readers.ib.IbSysfsReader;
import dev.frdiag.readers.ib.IbWindow;
import dev.frdiag.readers.nccl.NcclLog;
import dev.frdiag.readers.nccl.NcclLogParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gathers what one node's InfiniBand counters and NCCL logs say, for the daemon's diagnosis: counter snapshots are
 * taken periodically (so the window that matters, the stuck one, has a "before"), NCCL logs are parsed when asked.
 * Not thread-safe: the agent drives it under its lock.
 */
final class NodeContextCollector {
  private static final Logger log = LoggerFactory.getLogger(NodeContextCollector.class);
  /** Snapshots kept: at one a minute, half an hour of history, a few kilobytes per port each. */
  static final int KEPT = 30;
  /** How often the probes run in the background: an Xid logged before the stall is then in the first post. */
  static final Duration PROBE_BACKGROUND = Duration.ofMinutes(1);
  /** A probe run younger than this is not repeated for an investigation. */
  static final Duration PROBE_FRESH = Duration.ofSeconds(10);

  private final IbSysfsReader reader;
  private final List<Path> ncclLogs;
  private final Duration interval;
  private final Clock clock;
  private final ArrayDeque<IbSnapshot> history = new ArrayDeque<>();
  /** Null for none. */
  private final NodeProbes probes;

  /**
   * @param ibRoot the sysfs InfiniBand root (/sys/class/infiniband, or a copy in tests); null for none
   * @param ncclLogs NCCL_DEBUG_FILE logs of this node's ranks
   * @param interval how often {@link #tick} takes a snapshot
   */
  NodeContextCollector(Path ibRoot, List<Path> ncclLogs, Duration interval) {
    this(ibRoot, ncclLogs, interval, null, Clock.systemUTC());
  }

  /** @param probes the node's probes (dmesg, ncclras); null for none */
  NodeContextCollector(Path ibRoot, List<Path> ncclLogs, Duration interval, NodeProbes probes) {
    this(ibRoot, ncclLogs, interval, probes, Clock.systemUTC());
  }

  /** @param clock times the snapshots, and tells when one is due and how far back a window reaches */
  NodeContextCollector(Path ibRoot, List<Path> ncclLogs, Duration interval, NodeProbes probes, Clock clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
    this.probes = probes;
    this.reader = ibRoot == null ? null : new IbSysfsReader(ibRoot, clock);
    this.ncclLogs = List.copyOf(ncclLogs);
    this.interval = Objects.requireNonNull(interval, "interval");
    snapshot();
  }

  /** Takes a snapshot when the interval has passed since the last one, and runs the probes when due. */
  void tick() {
    if (probes != null) {
      probes.refresh(PROBE_BACKGROUND, () -> { });
    }
    IbSnapshot last = history.peekLast();
    if (reader != null && (last == null
        || Duration.between(last.takenAt(), clock.instant()).compareTo(interval) >= 0)) {
      snapshot();
    }
  }

  /**
   * The node's context now: counters over the window since the last snapshot taken {@code lookback} ago or
   * earlier (the hang's start, as far as the caller knows), and the findings of the NCCL logs.
   */
  NodeContext collect(String jobId, String hostname, Duration lookback) {
    return collect(jobId, hostname, lookback, null);
  }

  /**
   * The node's context, with only the probe findings about the job's own processes where they name a process:
   * a node's kernel log keeps every OOM kill and Xid since boot, most of them of other jobs or earlier runs.
   *
   * @param jobPids the pids the node's ranks run (or ran) as; null to keep every finding
   */
  NodeContext collect(String jobId, String hostname, Duration lookback, Set<Long> jobPids) {
    Instant now = clock.instant();
    Instant since = now.minus(lookback);
    NodeContext.Builder node = NodeContext.newBuilder().setJobId(jobId).setHostname(hostname)
        .setObservedAtNs(now.toEpochMilli() * 1_000_000);
    List<NicBinding> ibPorts = List.of();
    List<NicBinding> gpuBindings = new ArrayList<>();
    if (reader != null && !history.isEmpty()) {
      IbSnapshot before = history.peekFirst();
      for (IbSnapshot s : history) {
        if (!s.takenAt().isAfter(since)) {
          before = s;
        }
      }
      IbSnapshot latest = reader.snapshot();
      node.addAllFindings(ContextFindings.fromIb(IbWindow.between(before, latest), hostname));
      ibPorts = ContextFindings.ports(latest);
    }
    if (probes != null) {
      for (ContextFinding f : probes.latest()) {
        if (jobPids != null && f.getPid() > 0 && !jobPids.contains(f.getPid())) {
          continue;
        }
        node.addFindings(f.getHost().isEmpty() ? f.toBuilder().setHost(hostname).build() : f);
      }
    }
    for (Path file : ncclLogs) {
      if (!Files.isRegularFile(file)) {
        continue;
      }
      try {
        NcclLog parsed = NcclLogParser.create().parse(file);
        Map<String, List<NicBinding>> bound = ContextFindings.bindings(parsed);
        // A node's log names its own host; a log that names one other spelling of it (a short name) is still ours.
        List<NicBinding> ours = bound.getOrDefault(hostname,
            bound.size() == 1 ? bound.values().iterator().next() : List.of());
        for (NicBinding b : ours) {
          if (gpuBindings.stream().noneMatch(x -> x.getRank() == b.getRank() && x.getNic().equals(b.getNic()))) {
            gpuBindings.add(b);
          }
        }
        for (List<ContextFinding> findings : ContextFindings.fromNccl(parsed).values()) {
          for (ContextFinding f : findings) {
            node.addFindings(f.getHost().isEmpty() ? f.toBuilder().setHost(hostname).build() : f);
          }
        }
      } catch (IOException e) {
        log.debug("{}: {}", file, e.getMessage());
      }
    }
    node.addAllNics(gpuBindings);
    node.addAllRanks(gpuBindings.stream().filter(b -> b.getRank() >= 0).map(NicBinding::getRank).distinct()
        .toList());
    for (NicBinding port : ibPorts) {
      if (gpuBindings.stream().noneMatch(b -> b.getNic().equals(port.getNic()) && b.getPort() == port.getPort())) {
        node.addNics(port);
      }
    }
    return node.build();
  }

  /**
   * Runs the probes for an investigation unless a run is fresh; {@code done} is told (on the probes' thread) when
   * the run has finished, so the caller can post the node's context again with what they found.
   */
  void probeNow(Runnable done) {
    if (probes != null) {
      probes.refresh(PROBE_FRESH, done);
    }
  }

  /** Stops the probes. */
  void close() {
    if (probes != null) {
      probes.close();
    }
  }

  private void snapshot() {
    if (reader == null) {
      return;
    }
    if (history.size() == KEPT) {
      history.removeFirst();
    }
    history.addLast(reader.snapshot());
  }
}
