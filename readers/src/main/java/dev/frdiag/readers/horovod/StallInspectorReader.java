package dev.frdiag.readers.horovod;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads Horovod's stall warnings one line at a time: the per-op form of Horovod before 0.20 ({@code
 * HorovodAllreduce_grad_0 [missing ranks: 2]}, or {@code [ready ranks: 0, 1, 3]} where the ranks below the highest
 * one listed that are not listed never submitted the op), and the stall inspector's table of later versions
 * ({@code Missing ranks:} then {@code 0: [tensor, …]} per rank). A rank missing from an op its peers submitted never
 * issued it: the CPU side. Not thread-safe; one instance per file.
 */
public final class StallInspectorReader {
  private static final Pattern MISSING = Pattern.compile("\\[missing ranks: ([0-9, ]{1,4096})\\]");
  private static final Pattern READY = Pattern.compile("\\[ready ranks: ([0-9, ]{1,4096})\\]");
  private static final Pattern TABLE_ROW = Pattern.compile("^\\s*(?:\\[\\d+\\]\\s*)?(\\d{1,7}): \\[");
  /** A job has at most this many ranks worth naming one by one. */
  private static final int MAX_RANKS = 1 << 16;

  /** Each missing rank with the first line that said so. */
  private final Map<Integer, String> missing = new TreeMap<>();
  private final Map<Integer, String> text = new TreeMap<>();
  private boolean inTable;

  /** Takes the next line; {@code source} names it ("file:line"). */
  public void accept(String line, String source) {
    if (line.contains("Missing ranks:")) {
      inTable = true;
      return;
    }
    Matcher m;
    if (inTable) {
      if ((m = TABLE_ROW.matcher(line)).find()) {
        add(Integer.parseInt(m.group(1)), source, line);
        return;
      }
      inTable = false;
    }
    if (line.indexOf(" ranks: ") < 0) {
      return;
    }
    if ((m = MISSING.matcher(line)).find()) {
      ranks(m.group(1)).forEach(r -> add(r, source, line));
    } else if ((m = READY.matcher(line)).find()) {
      TreeSet<Integer> ready = ranks(m.group(1));
      if (!ready.isEmpty() && ready.last() < MAX_RANKS) {
        for (int r = 0; r < ready.last(); r++) {
          if (!ready.contains(r)) {
            add(r, source, line);
          }
        }
      }
    }
  }

  private void add(int rank, String source, String line) {
    if (rank < MAX_RANKS && missing.size() < 4096) {
      missing.putIfAbsent(rank, source);
      text.putIfAbsent(rank, line.strip().length() > 300 ? line.strip().substring(0, 300) : line.strip());
    }
  }

  private static TreeSet<Integer> ranks(String list) {
    TreeSet<Integer> out = new TreeSet<>();
    for (String r : list.split(",")) {
      String t = r.strip();
      if (!t.isEmpty() && t.length() <= 7) {
        out.add(Integer.parseInt(t));
      }
    }
    return out;
  }

  /** The ranks that never submitted an op their peers submitted, each with where and what was read. */
  public List<MissingRank> finish() {
    List<MissingRank> out = new ArrayList<>();
    missing.forEach((rank, source) -> out.add(new MissingRank(rank, text.get(rank), source)));
    return out;
  }

  /**
   * A rank Horovod listed as missing from an op.
   *
   * @param rank the Horovod rank (the global rank)
   * @param text the line that says so
   * @param source where it is, e.g. "train.log:12"
   */
  public record MissingRank(int rank, String text, String source) {}
}
