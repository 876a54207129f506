package dev.frdiag.agent;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.TimeUnit;

/** Identifies one version of a file without reading it: its modification time and size. */
record FileVersion(long modifiedMillis, long modifiedNanos, long size) {

  static FileVersion of(BasicFileAttributes a) {
    return new FileVersion(a.lastModifiedTime().toMillis(), a.lastModifiedTime().to(TimeUnit.NANOSECONDS),
        a.size());
  }

  /** The file's attributes, or null when it does not exist or cannot be looked at. */
  static BasicFileAttributes attributes(Path file) {
    try {
      return Files.readAttributes(file, BasicFileAttributes.class);
    } catch (IOException e) {
      return null;
    }
  }
}
