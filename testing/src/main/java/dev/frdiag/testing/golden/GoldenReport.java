package dev.frdiag.testing.golden;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;

/**
 * Compares a report, as a user sees it (JSON or text), with the one kept in test resources under
 * {@code golden/}, apart from what differs between two runs over the same evidence: wall-clock times,
 * durations, and which ranks the snapshot round asked.
 *
 * <p>On a difference the actual report is written under {@code target/golden-actual/} so that a change that is
 * meant (a better verdict) can be reviewed with {@code diff} and copied over the kept one.
 */
public final class GoldenReport {
  private static final Pattern INSTANT =
      Pattern.compile("\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{1,9})?Z");
  private static final Pattern CLOCK = Pattern.compile("\\b\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z");
  private static final Pattern OFFSET = Pattern.compile("\\(\\+\\d+\\.\\d{3} s\\)");
  private static final Pattern MILLIS = Pattern.compile("\\b\\d+(?:\\.\\d+)? ms\\b");
  // Which ranks are asked for a snapshot depends on how old each one's newest heartbeat is at that moment, and how
  // many answer on how busy the machine is: timing, not evidence. The request is kept as a placeholder, the count of
  // answers (a line of its own, when any rank was asked) is dropped.
  private static final Pattern SNAPSHOT_REQUEST = Pattern.compile("(?:no snapshot requested: the windows of \\d+ "
      + "connected|snapshots requested from \\d+ connected ranks \\(deadline <n> ms\\)(?:; the windows of \\d+ "
      + "other)?)(?: ranks stand for theirs \\(every record had reached the daemon at most <n> ms before\\))?");
  private static final Pattern SNAPSHOTS_RECEIVED_JSON = Pattern.compile(
      "\\}, \\{\\s*\"at\" : \"<time>\",\\s*\"event\" : \"\\d+ of \\d+ snapshots received after <n> ms\"\\s*(?=\\})");
  private static final Pattern SNAPSHOTS_RECEIVED_LINE =
      Pattern.compile("\\n[^\\n]*\\d+ of \\d+ snapshots received after <n> ms[^\\n]*");

  private GoldenReport() {}

  /** {@code report} with times and durations replaced by placeholders. */
  public static String normalize(String report) {
    String s = INSTANT.matcher(report).replaceAll("<time>");
    s = CLOCK.matcher(s).replaceAll("<time>");
    s = OFFSET.matcher(s).replaceAll("(+<seconds>)");
    s = MILLIS.matcher(s).replaceAll("<n> ms");
    s = SNAPSHOTS_RECEIVED_JSON.matcher(s).replaceAll("");
    s = SNAPSHOTS_RECEIVED_LINE.matcher(s).replaceAll("");
    return SNAPSHOT_REQUEST.matcher(s).replaceAll("<snapshot request>");
  }

  /**
   * Checks {@code actual} against resource {@code golden/<name>} of {@code owner}'s class path.
   *
   * @throws AssertionError naming both files when they differ
   */
  public static void assertMatches(Class<?> owner, String name, String actual) {
    String expected;
    try (InputStream in = owner.getResourceAsStream("/golden/" + name)) {
      if (in == null) {
        throw new AssertionError("no golden report golden/" + name + " on the test class path; "
            + keep(name, actual));
      }
      expected = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String got = normalize(actual);
    if (!normalize(expected).equals(got)) {
      throw new AssertionError("report differs from golden/" + name + "; " + keep(name, actual));
    }
  }

  private static String keep(String name, String actual) {
    Path out = Path.of("target", "golden-actual", name);
    try {
      Files.createDirectories(out.getParent());
      Files.writeString(out, actual);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return "this run's report is in " + out.toAbsolutePath();
  }
}
