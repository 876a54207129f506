package dev.frdiag.evidence;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.List;
import java.util.stream.Stream;

/**
 * Expands a glob given as an input path. A shell expands an unquoted glob itself; one that is quoted (to pass
 * thousands of rank files without overflowing the command line) or written in a config reaches us as is.
 */
final class Globs {
  private static final String SPECIAL = "*?[{";

  private Globs() {}

  /**
   * The files and folders {@code pattern} matches, sorted; the folders above its first special character are taken
   * as written, the rest matched segment by segment ({@code *} never crosses a {@code /}; {@code **} does).
   *
   * @throws UnusableInputException when {@code pattern} is no glob and does not exist, or matches nothing
   */
  static List<Path> expand(Path pattern) throws UnusableInputException {
    String text = pattern.toString();
    if (text.chars().noneMatch(c -> SPECIAL.indexOf(c) >= 0)) {
      throw new UnusableInputException(pattern + ": no such file or directory");
    }
    Path base = fixedPart(pattern);
    // A pattern that starts with a special character is matched relative to the working folder, as a shell would.
    Path start = base == null ? Path.of(".") : base;
    int depth = text.contains("**") ? Integer.MAX_VALUE
        : pattern.getNameCount() - (base == null ? 0 : base.getNameCount());
    if (!Files.isDirectory(start)) {
      throw new UnusableInputException(pattern + ": no file or folder matches (" + start + " is no folder)");
    }
    PathMatcher matcher = pattern.getFileSystem().getPathMatcher("glob:" + text);
    List<Path> found;
    try (Stream<Path> walk = Files.walk(start, depth)) {
      found = walk.map(p -> base == null ? start.relativize(p) : p).filter(matcher::matches).sorted().toList();
    } catch (IOException | UncheckedIOException e) {
      throw new UnusableInputException(pattern + ": cannot list " + start + ": " + e.getMessage(), e);
    }
    if (found.isEmpty()) {
      throw new UnusableInputException(pattern + ": no file or folder matches");
    }
    return found;
  }

  /** The leading folders of {@code pattern} with no special character; null when its first segment has one. */
  private static Path fixedPart(Path pattern) {
    Path fixed = pattern.getRoot();
    for (Path segment : pattern) {
      if (segment.toString().chars().anyMatch(c -> SPECIAL.indexOf(c) >= 0)) {
        break;
      }
      fixed = fixed == null ? segment : fixed.resolve(segment);
    }
    return fixed;
  }
}
