package dev.frdiag.agent.discovery;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Finds the process behind a rank's worker socket or debug pipe through {@code /proc}, so the daemon can name a
 * culprit by its pid: PyTorch says its pid in neither the dump nor the control plane.
 *
 * <p>Linux only; only the processes the agent may inspect (its own user's, or all as root) are found. A lookup lists
 * every such process's open files, so callers cache the answer; a listing answers every lookup for a second, so
 * the ranks of a node looking at once cost one. Thread-safe.
 */
public final class ProcessFinder {
  /** Set in /proc/net/unix's Flags column for a listening socket (__SO_ACCEPTCON). */
  private static final int LISTENING = 0x10000;

  /** How long one listing of every process's open files answers lookups: a node's ranks look at once. */
  static final long SNAPSHOT_NANOS = 1_000_000_000L;

  private final Path proc;
  private final long self;
  private final Object lock = new Object();
  /** Open file link text to the lowest pid holding it, as last listed. */
  @GuardedBy("lock")
  private Map<String, Long> owners = Map.of();
  @GuardedBy("lock")
  private long listedNanos;
  @GuardedBy("lock")
  private boolean listed;

  /** @param proc where procfs is mounted, normally {@code /proc} */
  public ProcessFinder(Path proc) {
    this.proc = Objects.requireNonNull(proc, "proc");
    this.self = ProcessHandle.current().pid();
  }

  /** The pid of the process listening on the Unix domain socket {@code socket}; 0 when none is found. */
  public long listenerOf(Path socket) {
    Set<String> links = new HashSet<>();
    String path = socket.toAbsolutePath().normalize().toString();
    List<String> lines;
    try {
      lines = Files.readAllLines(proc.resolve("net").resolve("unix"));
    } catch (IOException | UncheckedIOException e) {
      return 0;
    }
    for (String line : lines) {
      // Num RefCount Protocol Flags Type St Inode [Path]
      String[] f = line.trim().split("\\s+", 8);
      if (f.length == 8 && f[7].equals(path) && f[3].matches("[0-9A-Fa-f]{1,8}")
          && (Integer.parseInt(f[3], 16) & LISTENING) != 0) {
        links.add("socket:[" + f[6] + "]");
      }
    }
    return links.isEmpty() ? 0 : find(links::contains);
  }

  /** The pid of a process other than this one holding {@code file} (a named pipe) open; 0 when none is found. */
  public long holderOf(Path file) {
    String path;
    try {
      path = file.toRealPath().toString();
    } catch (IOException e) {
      return 0;
    }
    return find(path::equals);
  }

  /** The lowest pid other than this one with an open file whose link text {@code matches}; 0 when none. */
  private long find(Predicate<String> matches) {
    Map<String, Long> current;
    synchronized (lock) {
      long now = System.nanoTime();
      if (!listed || now - listedNanos >= SNAPSHOT_NANOS) {
        owners = list();
        listed = true;
        listedNanos = System.nanoTime();
      }
      current = owners;
    }
    long found = 0;
    for (Map.Entry<String, Long> e : current.entrySet()) {
      if ((found == 0 || e.getValue() < found) && matches.test(e.getKey())) {
        found = e.getValue();
      }
    }
    return found;
  }

  /** Every open file's link text of the processes visible to this one but itself, to the lowest pid holding it. */
  private Map<String, Long> list() {
    Map<String, Long> out = new HashMap<>();
    try (DirectoryStream<Path> pids = Files.newDirectoryStream(proc, p -> ProcProcessTable.isPid(p.getFileName().toString()))) {
      for (Path dir : pids) {
        long pid = Long.parseLong(dir.getFileName().toString());
        if (pid != self) {
          listFds(dir.resolve("fd"), pid, out);
        }
      }
    } catch (IOException | UncheckedIOException e) {
      // /proc unreadable: nothing is found.
    }
    return out;
  }

  private static void listFds(Path fds, long pid, Map<String, Long> out) {
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(fds)) {
      for (Path fd : entries) {
        try {
          out.merge(Files.readSymbolicLink(fd).toString(), pid, Math::min);
        } catch (IOException | UnsupportedOperationException e) {
          // Closed meanwhile.
        }
      }
    } catch (IOException | UncheckedIOException e) {
      // Another user's process, or one that exited.
    }
  }

  /** True while the process is there, as far as this agent can see. */
  public boolean isAlive(long pid) {
    return pid > 0 && Files.isDirectory(proc.resolve(Long.toString(pid)));
  }
}
