package dev.frdiag.torchrun;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Every process the suite starts, ended by pid: a launcher, everything it started, and processes that said their
 * pid in a file (ranks outlive torchrun when it dies first: they are then no longer its descendants). A JVM
 * shutdown hook ends whatever a test could not, as a last resort. Thread-safe.
 */
final class ProcessTree {
  /** How long a process may take to go once killed before the suite calls it left behind. */
  static final Duration EXIT_DEADLINE = Duration.ofSeconds(15);

  // Concurrent: the shutdown hook reads it while a test may be adding to it.
  private static final Set<ProcessHandle> LIVE = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(
        () -> LIVE.forEach(ProcessHandle::destroyForcibly), "kill-leftover-jobs"));
  }

  private final Map<Long, ProcessHandle> known = new LinkedHashMap<>();
  private final Instant started;

  /** A tree rooted at {@code launcher}, started just now. */
  ProcessTree(Process launcher) {
    this.started = launcher.toHandle().info().startInstant().orElse(Instant.now());
    add(launcher.toHandle());
  }

  /** Adds the launcher's current descendants; call it while the launcher lives, as often as new ones appear. */
  synchronized void addDescendants(ProcessHandle launcher) {
    launcher.descendants().forEach(this::add);
  }

  /**
   * Adds the process {@code pid} if it still runs and started after the launcher (a pid from a file may by now be
   * another process's).
   */
  synchronized void addPid(long pid) {
    ProcessHandle.of(pid)
        .filter(p -> p.info().startInstant().map(s -> !s.isBefore(started.minusSeconds(1))).orElse(false))
        .ifPresent(this::add);
  }

  private synchronized void add(ProcessHandle p) {
    known.putIfAbsent(p.pid(), p);
    LIVE.add(p);
  }

  /**
   * Kills every known process (SIGKILL: a rank blocked inside a gloo collective cannot run its SIGTERM handler)
   * and waits for each to be gone.
   *
   * @return the pids still alive after {@link #EXIT_DEADLINE}; empty when all are gone
   */
  synchronized List<Long> killAll() {
    // Descendants first: killed first, the launcher could no longer tell which processes were its own.
    List<ProcessHandle> all = List.copyOf(known.values());
    for (int i = all.size() - 1; i >= 0; i--) {
      all.get(i).destroyForcibly();
    }
    long deadline = System.nanoTime() + EXIT_DEADLINE.toNanos();
    for (ProcessHandle p : all) {
      try {
        p.onExit().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (Exception e) {
        // still alive, or interrupted: reported below
      }
    }
    List<Long> alive = all.stream().filter(ProcessHandle::isAlive).map(ProcessHandle::pid).toList();
    all.stream().filter(p -> !p.isAlive()).forEach(LIVE::remove);
    return alive;
  }

  /** The pids of every process this tree has known, for the record. */
  synchronized Set<Long> pids() {
    return known.keySet().stream().collect(Collectors.toUnmodifiableSet());
  }

  /**
   * Processes of this machine whose command line contains {@code marker}: a job's directory is on the command line
   * of its launcher and of every rank, so any process left behind by it shows up here, whoever its parent is now.
   */
  static List<String> runningWith(String marker) {
    return ProcessHandle.allProcesses()
        .filter(ProcessHandle::isAlive)
        .filter(p -> p.info().commandLine().map(c -> c.contains(marker)).orElse(false))
        .map(p -> p.pid() + " " + p.info().commandLine().orElse("?"))
        .toList();
  }
}
