package dev.frdiag.readers.ib;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Snapshots every port under {@code /sys/class/infiniband/<dev>/ports/<n>/}: {@code counters/*},
 * {@code hw_counters/*}, {@code state}, {@code phys_state}, {@code rate} and {@code link_layer}.
 *
 * <p>Never throws for what sysfs holds: a missing or unreadable file, a counter that reads {@code N/A (no PMA)}, a
 * device without ports, or no root at all become notes in the snapshot, and every other port is still read.
 *
 * <p>Thread-safe: holds no state between snapshots.
 */
public final class IbSysfsReader {
  /** Where the kernel lists RDMA devices. */
  public static final Path DEFAULT_ROOT = Path.of("/sys/class/infiniband");

  private final Path root;
  private final Clock clock;

  /** A reader of {@link #DEFAULT_ROOT} on the system clock. */
  public IbSysfsReader() {
    this(DEFAULT_ROOT, Clock.systemUTC());
  }

  /** A reader of {@code root} (a copy of {@code /sys/class/infiniband} in tests) on {@code clock}. */
  public IbSysfsReader(Path root, Clock clock) {
    this.root = Objects.requireNonNull(root, "root");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** Reads every port now. */
  public IbSnapshot snapshot() {
    Instant takenAt = clock.instant();
    SortedMap<IbPortId, IbPortSnapshot> ports = new TreeMap<>();
    List<String> notes = new ArrayList<>();
    if (!Files.isDirectory(root)) {
      notes.add(root + ": missing (no RDMA device, or the driver is not loaded)");
      return new IbSnapshot(takenAt, root, ports, notes);
    }
    for (Path dev : list(root, notes, root.toString())) {
      String device = dev.getFileName().toString();
      Path portsDir = dev.resolve("ports");
      if (!Files.isDirectory(portsDir)) {
        notes.add(device + ": no ports directory");
        continue;
      }
      for (Path portDir : list(portsDir, notes, device + "/ports")) {
        String name = portDir.getFileName().toString();
        if (!name.chars().allMatch(Character::isDigit) || name.isEmpty() || name.length() > 4) {
          continue;
        }
        IbPortId id = new IbPortId(device, Integer.parseInt(name));
        ports.put(id, port(id, portDir));
      }
    }
    return new IbSnapshot(takenAt, root, ports, notes);
  }

  private static IbPortSnapshot port(IbPortId id, Path dir) {
    List<String> notes = new ArrayList<>();
    String state = orEmpty(text(dir.resolve("state"), "state", notes));
    String phys = orEmpty(text(dir.resolve("phys_state"), "phys_state", notes));
    String rate = orEmpty(text(dir.resolve("rate"), "rate", notes));
    String linkLayer = orEmpty(text(dir.resolve("link_layer"), "link_layer", notes));
    Map<String, Long> counters = new TreeMap<>();
    Path countersDir = dir.resolve("counters");
    if (Files.isDirectory(countersDir)) {
      numbers(countersDir, "counters", counters, notes);
    } else {
      notes.add("counters: missing (the driver exposes no PMA counters)");
    }
    Map<String, Long> hw = new TreeMap<>();
    Path hwDir = dir.resolve("hw_counters");
    boolean hwPresent = Files.isDirectory(hwDir);
    if (hwPresent) {
      numbers(hwDir, "hw_counters", hw, notes);
    } else {
      notes.add("hw_counters: missing");
    }
    return new IbPortSnapshot(id, state, phys, rate, linkLayer, counters, hw, hwPresent, notes);
  }

  private static void numbers(Path dir, String label, Map<String, Long> into, List<String> notes) {
    for (Path f : list(dir, notes, label)) {
      String name = f.getFileName().toString();
      String raw = text(f, label + "/" + name, notes);
      if (raw == null) {
        continue;
      }
      if (raw.isEmpty()) {
        notes.add(label + "/" + name + ": empty");
        continue;
      }
      try {
        // Counters are unsigned 64-bit; values past Long.MAX_VALUE are not met in practice and stay negative here.
        into.put(name, Long.parseUnsignedLong(raw));
      } catch (NumberFormatException e) {
        notes.add(label + "/" + name + ": " + raw);
      }
    }
  }

  private static List<Path> list(Path dir, List<String> notes, String label) {
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    } catch (IOException | RuntimeException e) {
      notes.add(label + ": unreadable (" + reason(e) + ")");
      return List.of();
    }
  }

  /** The trimmed content of a sysfs file, or null with a note. */
  private static String text(Path file, String label, List<String> notes) {
    try {
      return new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1).trim();
    } catch (NoSuchFileException e) {
      notes.add(label + ": missing");
    } catch (IOException | RuntimeException e) {
      notes.add(label + ": unreadable (" + reason(e) + ")");
    }
    return null;
  }

  private static String orEmpty(String s) {
    return s == null ? "" : s;
  }

  private static String reason(Exception e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
  }
}
