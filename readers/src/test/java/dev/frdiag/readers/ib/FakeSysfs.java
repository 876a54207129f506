package dev.frdiag.readers.ib;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** A writable copy of the fake sysfs tree in test resources, and a clock the test moves. */
final class FakeSysfs {
  final Path root;
  final TestClock clock = new TestClock(Instant.parse("2025-03-21T02:07:08Z"));

  private FakeSysfs(Path root) {
    this.root = root;
  }

  /** Copies {@code sysfs/class/infiniband} under {@code dir}. */
  static FakeSysfs copyTo(Path dir) throws IOException, URISyntaxException {
    Path source = Path.of(FakeSysfs.class.getResource("/sysfs/class/infiniband").toURI());
    Path target = dir.resolve("class/infiniband");
    try (Stream<Path> files = Files.walk(source)) {
      for (Path p : files.toList()) {
        Path t = target.resolve(source.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(t);
        } else {
          Files.copy(p, t);
        }
      }
    }
    return new FakeSysfs(target);
  }

  IbSysfsReader reader() {
    return new IbSysfsReader(root, clock);
  }

  /** Writes {@code value} (with the newline sysfs adds) to {@code <device>/ports/1/<file>}. */
  FakeSysfs set(String device, String file, String value) {
    try {
      Files.writeString(root.resolve(device).resolve("ports/1").resolve(file), value + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return this;
  }

  /** Removes a file or a whole directory under the root. */
  FakeSysfs remove(String relative) throws IOException {
    Path p = root.resolve(relative);
    try (Stream<Path> files = Files.walk(p)) {
      for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(f);
      }
    }
    return this;
  }

  /** Replaces a file by a directory, which no read can get a value from. */
  FakeSysfs makeUnreadable(String relative) throws IOException {
    Path p = root.resolve(relative);
    Files.delete(p);
    Files.createDirectory(p);
    return this;
  }

  static List<String> devices(IbSnapshot s) {
    return s.ports().keySet().stream().map(IbPortId::toString).toList();
  }

  /** A clock that stands still until the test moves it. */
  static final class TestClock extends Clock {
    private Instant now;

    TestClock(Instant start) {
      this.now = start;
    }

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }
  }
}
