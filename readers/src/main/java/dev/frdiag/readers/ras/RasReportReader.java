package dev.frdiag.readers.ras;

import dev.frdiag.readers.ras.RasReport.CommunicatorRow;
import dev.frdiag.readers.ras.RasReport.CountMismatch;
import dev.frdiag.readers.ras.RasReport.LaunchCount;
import dev.frdiag.readers.ras.RasReport.RasProcess;
import dev.frdiag.readers.ras.RasReport.RasRank;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads NCCL RAS status reports one line at a time, in the text form {@code rasClientRunInit} and
 * {@code rasClientRunComms} print (NCCL {@code src/ras/client_support.cc}): a report starts at its "Job summary"
 * or "Communicators..." heading and runs to the next one or the end of the input. Lines may be indented (pasted
 * into an issue or a log); lines of other programs between them are skipped. Not thread-safe; one instance per
 * file.
 */
public final class RasReportReader {
  private static final Pattern JOB_ROW = Pattern.compile("^\\s*(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s*$");
  private static final Pattern COMM_ROW = Pattern.compile("^\\s*(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+(?:-\\d+)?)\\s+"
      + "(\\d+)\\s+(\\d+)\\s+(NOCOMM|INIT|RUNNING|FINALIZE|ABORT)\\s+([A-Z,]+)\\s*$");
  private static final Pattern BLOCK = Pattern.compile("^\\s*(#\\d+-\\d+) \\(([0-9a-fA-F]+)\\) ([A-Z,]+)\\s*$");
  private static final Pattern COUNTS = Pattern.compile("Communicator ranks have different (\\w+) operation counts");
  private static final Pattern GROUP = Pattern.compile("^\\s*(\\d+) ranks have launched up to operation (\\d+)");
  private static final Pattern GROUP_NONE = Pattern.compile("^\\s*(\\d+) ranks have not launched any operations");
  private static final Pattern ONE = Pattern.compile("^\\s*Rank (\\d+) has (?:launched up to operation (\\d+)|not "
      + "launched any operations) -- (.*)$");
  private static final Pattern LISTED = Pattern.compile("^\\s*Rank (\\d+) -- (.*)$");
  private static final Pattern MANAGED = Pattern.compile("GPU (.+?) managed by process (\\d+) on node (\\S+)");
  private static final Pattern PROCESS = Pattern.compile(
      "^\\s*Process (\\d+) on node (\\S+) managing GPUs? (\\S+)");

  /** Where in a report the reader is. */
  private enum Section { JOB, COMMUNICATORS, PROBLEMS, DEAD, MISSING, BLOCK }

  private final List<RasReport> reports = new ArrayList<>();
  private boolean inReport;
  private Section section;
  private String source;
  private int jobRanks;
  private List<CommunicatorRow> rows;
  private List<CountMismatch> mismatches;
  private List<RasProcess> dead;
  private List<RasProcess> missing;
  private List<String> other;
  /** The block being read ({@code #0-0 (hash) MISMATCH}) and, inside it, the count mismatch and group. */
  private String blockComm;
  private String blockHash;
  private String blockSource;
  private String operation;
  private List<LaunchCount> counts;
  private int groupRanks;
  private long groupLaunched;
  private List<RasRank> groupListed;

  /** Takes the next line; {@code where} names it ("file:line"). */
  public void accept(String line, String where) {
    if (!inReport && !line.contains("Job summary") && !line.contains("Communicators...")) {
      // Outside a report only its headings matter, and most lines of a log are other programs'.
      return;
    }
    String t = line.strip();
    if (t.equals("Job summary")) {
      start(where, Section.JOB);
      return;
    }
    if (t.startsWith("Communicators...")) {
      if (!inReport) {
        start(where, Section.COMMUNICATORS);
      }
      section = Section.COMMUNICATORS;
      return;
    }
    if (!inReport || t.isEmpty() || t.chars().allMatch(c -> c == '=')) {
      return;
    }
    if (t.equals("Errors") || t.equals("Warnings")) {
      endBlock();
      section = Section.PROBLEMS;
      return;
    }
    switch (section) {
      case JOB -> {
        Matcher m = JOB_ROW.matcher(line);
        if (m.matches()) {
          jobRanks = Integer.parseInt(m.group(5));
        }
      }
      case COMMUNICATORS -> {
        Matcher m = COMM_ROW.matcher(line);
        if (m.matches()) {
          rows.add(new CommunicatorRow(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
              Integer.parseInt(m.group(3)), Integer.parseInt(m.group(5)), Integer.parseInt(m.group(6)), m.group(7),
              m.group(8)));
        }
      }
      default -> problem(line, t, where);
    }
  }

  /** The reports read, the last one closed at the end of the input. */
  public List<RasReport> finish() {
    close();
    return List.copyOf(reports);
  }

  private void problem(String line, String t, String where) {
    if (t.equals("DEAD") || t.equals("INCOMPLETE")) {
      endBlock();
      section = t.equals("DEAD") ? Section.DEAD : Section.MISSING;
      return;
    }
    Matcher b = BLOCK.matcher(line);
    if (b.matches()) {
      endBlock();
      section = Section.BLOCK;
      blockComm = b.group(1);
      blockHash = b.group(2);
      blockSource = where;
      if (!b.group(3).equals("MISMATCH")) {
        other.add(t);
      }
      return;
    }
    Matcher p = PROCESS.matcher(line);
    if (p.find() && (section == Section.DEAD || section == Section.MISSING)) {
      (section == Section.DEAD ? dead : missing).add(new RasProcess(Long.parseLong(p.group(1)), p.group(2),
          p.group(3)));
      return;
    }
    if (section != Section.BLOCK) {
      return;
    }
    Matcher c = COUNTS.matcher(t);
    if (c.find()) {
      endCounts();
      operation = c.group(1);
      counts = new ArrayList<>();
      return;
    }
    if (counts == null) {
      // A status mismatch or an error breakdown: told once, by its first line.
      if (!t.startsWith("Rank ") && other.stream().noneMatch(o -> o.startsWith(blockComm + ": "))) {
        other.add(blockComm + ": " + t);
      }
      return;
    }
    Matcher g = GROUP.matcher(line);
    Matcher none = GROUP_NONE.matcher(line);
    if (g.find() || none.find()) {
      endGroup();
      boolean launched = g.find(0);
      groupRanks = Integer.parseInt(launched ? g.group(1) : none.group(1));
      groupLaunched = launched ? Long.parseLong(g.group(2)) : 0;
      groupListed = new ArrayList<>();
      return;
    }
    Matcher one = ONE.matcher(line);
    if (one.matches()) {
      endGroup();
      counts.add(new LaunchCount(1, one.group(2) == null ? 0 : Long.parseLong(one.group(2)),
          List.of(rank(Integer.parseInt(one.group(1)), one.group(3)))));
      return;
    }
    Matcher listed = LISTED.matcher(line);
    if (listed.matches() && groupListed != null) {
      groupListed.add(rank(Integer.parseInt(listed.group(1)), listed.group(2)));
    }
  }

  private static RasRank rank(int rank, String rest) {
    Matcher m = MANAGED.matcher(rest);
    return m.find() ? new RasRank(rank, m.group(1), Long.parseLong(m.group(2)), m.group(3))
        : new RasRank(rank, "", -1, "");
  }

  private void start(String where, Section first) {
    close();
    inReport = true;
    section = first;
    source = where;
    jobRanks = -1;
    rows = new ArrayList<>();
    mismatches = new ArrayList<>();
    dead = new ArrayList<>();
    missing = new ArrayList<>();
    other = new ArrayList<>();
  }

  private void endGroup() {
    if (groupListed != null) {
      counts.add(new LaunchCount(groupRanks, groupLaunched, groupListed));
      groupListed = null;
    }
  }

  private void endCounts() {
    if (counts != null) {
      endGroup();
      if (!counts.isEmpty()) {
        mismatches.add(new CountMismatch(blockComm, blockHash, operation, counts, blockSource));
      }
      counts = null;
    }
  }

  private void endBlock() {
    endCounts();
    blockComm = null;
  }

  private void close() {
    if (inReport) {
      endBlock();
      reports.add(new RasReport(source, jobRanks, rows, mismatches, dead, missing, other));
      inReport = false;
    }
  }
}
