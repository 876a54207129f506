package dev.frdiag.agent.discovery;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link ProcessTable} read from a Linux proc file system: {@code <root>/<pid>/stat} for the parent and start
 * time, {@code <root>/<pid>/environ} (NUL-separated) for the environment. Tests point it at a fake tree.
 */
public final class ProcProcessTable implements ProcessTable {
  private static final Logger log = LoggerFactory.getLogger(ProcProcessTable.class);
  /** Environments larger than this are not PyTorch workers' (Linux caps a process's arguments and env at 2 MiB). */
  static final long MAX_ENVIRON_BYTES = 4L << 20;

  private final Path root;

  /** @param root the proc mount, {@code /proc} on a real node */
  public ProcProcessTable(Path root) {
    this.root = Objects.requireNonNull(root, "root");
  }

  @Override
  public List<Entry> processes() {
    List<Entry> out = new ArrayList<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, p -> isPid(p.getFileName().toString()))) {
      for (Path dir : dirs) {
        Entry e = stat(Long.parseLong(dir.getFileName().toString()), dir.resolve("stat"));
        if (e != null) {
          out.add(e);
        }
      }
    } catch (IOException e) {
      log.warn("cannot list processes in {}: {}", root, e.toString());
    }
    return out;
  }

  @Override
  public Optional<Map<String, String>> environment(long pid) {
    Path file = root.resolve(Long.toString(pid)).resolve("environ");
    byte[] bytes;
    try {
      // environ reports size 0; its real length shows only on reading.
      bytes = Files.readAllBytes(file);
    } catch (AccessDeniedException | NoSuchFileException e) {
      // Another user's process, or one that just exited: not ours to follow.
      return Optional.empty();
    } catch (IOException e) {
      // EACCES surfaces as a plain IOException on some kernels ("Permission denied"); ESRCH as well when racing exit.
      log.debug("cannot read {}: {}", file, e.toString());
      return Optional.empty();
    }
    if (bytes.length > MAX_ENVIRON_BYTES) {
      return Optional.empty();
    }
    return Optional.of(parseEnviron(bytes));
  }

  /** {@code KEY=value\0KEY=value\0}: the first '=' splits; entries without one are skipped. */
  static Map<String, String> parseEnviron(byte[] bytes) {
    Map<String, String> env = new HashMap<>();
    int start = 0;
    for (int i = 0; i <= bytes.length; i++) {
      if (i == bytes.length || bytes[i] == 0) {
        if (i > start) {
          String entry = new String(bytes, start, i - start, StandardCharsets.UTF_8);
          int eq = entry.indexOf('=');
          if (eq > 0) {
            env.putIfAbsent(entry.substring(0, eq), entry.substring(eq + 1));
          }
        }
        start = i + 1;
      }
    }
    return env;
  }

  /** Parses {@code pid (comm) state ppid … starttime …}; null when the process is gone or the line is odd. */
  private static Entry stat(long pid, Path file) {
    String line;
    try {
      line = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return null;
    }
    // comm may hold spaces and parentheses; the fields after it start past the last ')'.
    int close = line.lastIndexOf(')');
    if (close < 0) {
      return null;
    }
    String[] f = line.substring(close + 1).trim().split("\\s+");
    // f[0] is field 3 (state): ppid is field 4, starttime field 22.
    if (f.length < 20) {
      return null;
    }
    try {
      return new Entry(pid, Long.parseLong(f[1]), Long.parseLong(f[19]));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /** True when a /proc entry's name is a process id. */
  static boolean isPid(String name) {
    if (name.isEmpty() || name.length() > 10) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      if (name.charAt(i) < '0' || name.charAt(i) > '9') {
        return false;
      }
    }
    return true;
  }
}
