package dev.frdiag.readers.nccltests;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads nccl-tests output one line at a time: its banner ({@code # nThread 1 nGpus 1 minBytes 8 …}), the device
 * list ({@code #  Rank  0 Group  0 Pid  1234 on node1 device  0 [0x18] NVIDIA A100…}, without {@code Group} in
 * older versions), the result rows ({@code 8  2  float  sum  -1  40.12  0.00  0.00  0  …}) and the closing
 * {@code # Out of bounds values : 0 OK} and {@code # Avg bus bandwidth : 52.3}. Lines may carry a launcher's
 * prefix (mpirun's {@code [1,0]<stdout>:}, a host name). Not thread-safe; one instance per file. Other lines are
 * skipped; it never fails on content it does not know.
 */
public final class NcclTestsReader {
  private static final Pattern BANNER = Pattern.compile("# nThread \\d+ nGpus \\d+ minBytes \\d+ maxBytes \\d+");
  private static final Pattern DEVICE = Pattern.compile(
      "#\\s+Rank\\s+(\\d{1,7})(?:\\s+Group\\s+\\d+)?\\s+Pid\\s+\\d+ on\\s+(\\S+) device\\s+\\d+");
  /**
   * size, count, type, redop (absent for broadcast in older versions), root, then the out-of-place time, algbw,
   * busbw and #wrong ({@code N/A} when validation is off).
   */
  private static final Pattern ROW = Pattern.compile("(?:^|\\s)(\\d{1,15})\\s+(\\d{1,15})\\s+([a-z0-9]+)\\s+"
      + "(?:(sum|prod|min|max|avg|none|mulsum)\\s+)?(-?\\d{1,7})\\s+[0-9.]+\\s+[0-9.]+\\s+[0-9.]+\\s+(\\d+|N/A)");
  private static final Pattern OUT_OF_BOUNDS = Pattern.compile("# Out of bounds values : (\\d+) (OK|FAILED)");
  private static final Pattern AVG = Pattern.compile("# Avg bus bandwidth\\s*: ([0-9.]+)");

  private final List<NcclTestsRun> runs = new ArrayList<>();
  private String source;
  private int devices;
  private final Set<String> hosts = new LinkedHashSet<>();
  private int sizes;
  private long lastSize = -1;
  private int wrong;
  private boolean outOfBoundsSeen;
  private boolean outOfBoundsOk;
  private double avg = Double.NaN;

  /** Takes the next line; {@code source} names it ("file:line"). */
  public void accept(String line, String source) {
    if (line.indexOf('#') < 0) {
      if (line.indexOf('.') >= 0) {
        row(line, source);
      }
      return;
    }
    if (line.contains("# nThread ") && BANNER.matcher(line).find()) {
      close();
      this.source = source;
      return;
    }
    if (this.source == null) {
      if (line.contains("(elements)") || line.contains("size") && line.contains("count") && line.contains("busbw")) {
        // An excerpt from the results table on: the banner was left out, the run is still this one.
        this.source = source;
      }
      return;
    }
    Matcher m;
    if (line.contains("Pid") && (m = DEVICE.matcher(line)).find()) {
      devices++;
      if (hosts.size() < 4096) {
        hosts.add(m.group(2));
      }
    } else if ((m = OUT_OF_BOUNDS.matcher(line)).find()) {
      outOfBoundsSeen = true;
      outOfBoundsOk = m.group(2).equals("OK") && m.group(1).equals("0");
    } else if ((m = AVG.matcher(line)).find()) {
      avg = Double.parseDouble(m.group(1));
    }
  }

  private void row(String line, String source) {
    Matcher m = ROW.matcher(line);
    if (!m.find()) {
      return;
    }
    if (this.source == null) {
      // An excerpt from the middle of the table on: its rows are still a run's.
      this.source = source;
    }
    sizes++;
    lastSize = Long.parseLong(m.group(1));
    if (!m.group(6).equals("N/A") && Long.parseLong(m.group(6)) > 0) {
      wrong++;
    }
  }

  /** Every run read, in order; the last may have stopped part-way. */
  public List<NcclTestsRun> finish() {
    close();
    return List.copyOf(runs);
  }

  private void close() {
    if (source != null) {
      runs.add(new NcclTestsRun(devices, new ArrayList<>(hosts), sizes, lastSize, wrong,
          outOfBoundsSeen && !Double.isNaN(avg), outOfBoundsOk, avg, source));
    }
    source = null;
    devices = 0;
    hosts.clear();
    sizes = 0;
    lastSize = -1;
    wrong = 0;
    outOfBoundsSeen = false;
    outOfBoundsOk = false;
    avg = Double.NaN;
  }
}
