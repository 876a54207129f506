package dev.frdiag.readers.pytorch;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads PyTorch's desync report ({@code TORCH_NCCL_DESYNC_DEBUG=1}, {@code retrieveDesyncReport} in TraceUtils.h):
 * each rank records the start and end of its collectives in the c10d store, and at a timeout PyTorch names the
 * ranks behind: "[47] joined but didn't finish collective #41207", "[0, 1] finished collective #41207, but didn't
 * join collective #41208", or "ranks [47] are the lagging ranks that caused this timeout. They never joined any
 * collectives". Not thread-safe; one instance per file.
 */
public final class DesyncReportReader {
  private static final Pattern STARTED = Pattern.compile("\\[([0-9, ]{1,4096})\\] joined but didn't finish collective "
      + "#(\\d{1,18})");
  private static final Pattern NOT_JOINED = Pattern.compile("\\[([0-9, ]{1,4096})\\] finished collective #(\\d{1,18}), "
      + "but didn't join collective #(\\d{1,18})");
  private static final Pattern NEVER_JOINED = Pattern.compile("ranks \\[([0-9, ]{1,4096})\\] are the lagging ranks "
      + "that caused this timeout");

  /** What one desync line says of the ranks it names. */
  public enum Kind {
    /** They started the lagging collective and did not finish it. */
    STARTED_NOT_FINISHED,
    /** They finished the lagging collective and never started the next: they did not issue it. */
    NOT_JOINED_NEXT,
    /** They never joined any collective. */
    NEVER_JOINED
  }

  /**
   * One line of a desync report.
   *
   * @param kind what it says
   * @param ranks the ranks it names
   * @param seq the collective concerned, counted from 1 per process group; -1 for {@link Kind#NEVER_JOINED}
   * @param text the line
   * @param source where it is, e.g. "train.log:12"
   */
  public record Lagging(Kind kind, List<Integer> ranks, long seq, String text, String source) {
    public Lagging {
      ranks = List.copyOf(ranks);
      Objects.requireNonNull(text, "text");
      Objects.requireNonNull(source, "source");
    }
  }

  private final List<Lagging> found = new ArrayList<>();

  /** Takes the next line; {@code source} names it ("file:line"). */
  public void accept(String line, String source) {
    if (!line.contains("collective") || found.size() >= 64) {
      return;
    }
    Matcher m;
    if ((m = NOT_JOINED.matcher(line)).find()) {
      found.add(new Lagging(Kind.NOT_JOINED_NEXT, ranks(m.group(1)), Long.parseLong(m.group(3)), line.strip(),
          source));
    } else if ((m = STARTED.matcher(line)).find()) {
      found.add(new Lagging(Kind.STARTED_NOT_FINISHED, ranks(m.group(1)), Long.parseLong(m.group(2)), line.strip(),
          source));
    } else if ((m = NEVER_JOINED.matcher(line)).find()) {
      found.add(new Lagging(Kind.NEVER_JOINED, ranks(m.group(1)), -1, line.strip(), source));
    }
  }

  private static List<Integer> ranks(String list) {
    List<Integer> out = new ArrayList<>();
    for (String r : list.split(",")) {
      String t = r.strip();
      if (!t.isEmpty() && t.length() <= 7) {
        out.add(Integer.parseInt(t));
      }
    }
    return out;
  }

  /** The lines read, in file order. */
  public List<Lagging> finish() {
    return List.copyOf(found);
  }
}
