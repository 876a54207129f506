package dev.frdiag.torchrun;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** The suite's folders under target/ are made anew: one run's dumps never mix with another's. */
final class Dirs {
  private Dirs() {}

  /** Deletes {@code dir} and everything under it, without following links; nothing when it does not exist. */
  static void deleteRecursively(Path dir) throws IOException {
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
