package dev.frdiag.readers.gpu;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads {@code nvidia-smi -q} output line by line (as printed, or pasted into a log) and keeps the GPUs whose
 * memory needs attention. Per NVIDIA's GPU memory error management guide (docs.nvidia.com/deploy/
 * a100-gpu-mem-error-mgmt): "Remapped Rows → Pending: Yes" means an uncorrectable error was contained and the GPU
 * needs a reset before the row is remapped; "Remapping Failure Occurred: Yes" means the GPU ran out of spare rows
 * (replace it); "Retired Pages → Pending Page Blacklist: Yes" is the same for GPUs before A100; a non-zero volatile
 * uncorrectable count ("DRAM Uncorrectable", or "Double Bit → Device Memory" in older drivers) is an error since
 * the driver loaded. Correctable counts are not problems. Sections are told apart by indentation.
 */
public final class NvidiaSmiReader {
  private static final Pattern GPU = Pattern.compile("^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9A-Fa-f])\\s*$");
  private static final Pattern FIELD = Pattern.compile("^(\\s*)([^:]+?)\\s*:\\s*(.*?)\\s*$");
  private static final Pattern SECTION = Pattern.compile("^(\\s+)(\\S.*?)\\s*$");

  private final List<GpuHealth> gpus = new ArrayList<>();
  /** Section names with their indentation, innermost last. */
  private final Deque<Object[]> path = new ArrayDeque<>();
  private String busId;
  private String source;
  private List<Long> pids = new ArrayList<>();
  private List<String> problems = new ArrayList<>();

  /** Takes one line. */
  public void accept(String line, String where) {
    Matcher g = GPU.matcher(line);
    if (g.matches()) {
      flush();
      busId = kernelStyle(g.group(1).toLowerCase(Locale.ROOT));
      source = where;
      path.clear();
      return;
    }
    if (busId == null || line.isBlank()) {
      return;
    }
    if (!line.startsWith(" ") && !line.startsWith("\t")) {
      // A line at the margin ends the GPU's section (another tool's output, a new log line).
      flush();
      return;
    }
    Matcher f = FIELD.matcher(line);
    int indent;
    if (f.matches() && !f.group(3).isEmpty()) {
      indent = f.group(1).length();
      popTo(indent);
      field(f.group(2).strip(), f.group(3));
      return;
    }
    Matcher s = SECTION.matcher(line.endsWith(":") ? line.substring(0, line.length() - 1) : line);
    if (s.matches()) {
      indent = s.group(1).length();
      popTo(indent);
      path.addLast(new Object[] {indent, s.group(2).strip()});
    }
  }

  /** The GPUs read whose memory needs attention, in order. */
  public List<GpuHealth> finish() {
    flush();
    return List.copyOf(gpus);
  }

  private void field(String key, String value) {
    String where = String.join(" → ", path.stream().map(p -> (String) p[1]).toList());
    boolean yes = value.equalsIgnoreCase("Yes");
    if (where.equals("Processes") && key.equals("Process ID")) {
      try {
        pids.add(Long.parseLong(value));
      } catch (NumberFormatException e) {
        // "N/A" in containers without the pid namespace.
      }
    } else if (where.equals("Remapped Rows") && (key.equals("Pending") || key.equals("Remapping Failure Occurred"))
        && yes) {
      problems.add("Remapped Rows: " + key + ": Yes");
    } else if (where.equals("Retired Pages") && (key.equals("Pending Page Blacklist") || key.equals("Pending"))
        && yes) {
      problems.add("Retired Pages: " + key + ": Yes");
    } else if (where.startsWith("ECC Errors → Volatile") && isUncorrectable(where, key) && positive(value)) {
      problems.add(where + " → " + key + ": " + value);
    }
  }

  /**
   * "00000000:dc:00.0" as the driver's Xid lines and NCCL name the GPU, "0000:dc:00": a 16-bit domain, no
   * function, so one GPU has one name across sources.
   */
  static String kernelStyle(String busId) {
    int colon = busId.indexOf(':');
    String domain = busId.substring(Math.max(0, colon - 4), colon);
    int dot = busId.lastIndexOf('.');
    return domain + busId.substring(colon, dot < 0 ? busId.length() : dot);
  }

  private static boolean isUncorrectable(String where, String key) {
    return key.endsWith("Uncorrectable") || where.endsWith("Double Bit") && (key.equals("Device Memory")
        || key.equals("Total"));
  }

  private static boolean positive(String value) {
    try {
      return Long.parseLong(value) > 0;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  private void popTo(int indent) {
    while (!path.isEmpty() && (int) path.peekLast()[0] >= indent) {
      path.removeLast();
    }
  }

  private void flush() {
    if (busId != null && !problems.isEmpty()) {
      gpus.add(new GpuHealth(busId, pids, problems, source));
    }
    busId = null;
    pids = new ArrayList<>();
    problems = new ArrayList<>();
    path.clear();
  }
}
