package dev.frdiag.readers.ras;

import java.util.List;
import java.util.Objects;

/**
 * One NCCL RAS status report, as far as it was read (NCCL {@code src/ras/client_support.cc},
 * {@code rasClientRunComms}).
 *
 * @param source where it starts, e.g. "ras.txt:12"
 * @param jobRanks the job's GPUs in total from the job summary, which is its number of ranks; -1 when not read
 * @param communicators the rows of the communicators table
 * @param mismatches communicators whose ranks launched different numbers of a collective
 * @param dead processes RAS considers dead (unreachable over its network)
 * @param missing processes RAS got no data from ({@code INCOMPLETE}): unresponsive or dead
 * @param otherProblems the first line of every other error or warning block, e.g. an {@code ERROR} or a status
 *     mismatch
 */
public record RasReport(String source, int jobRanks, List<CommunicatorRow> communicators,
    List<CountMismatch> mismatches, List<RasProcess> dead, List<RasProcess> missing, List<String> otherProblems) {
  public RasReport {
    Objects.requireNonNull(source, "source");
    communicators = List.copyOf(communicators);
    mismatches = List.copyOf(mismatches);
    dead = List.copyOf(dead);
    missing = List.copyOf(missing);
    otherProblems = List.copyOf(otherProblems);
  }

  /**
   * True when every communicator is RUNNING with no error and nothing else is reported: every process answered and
   * every rank of every communicator had launched as many collectives of each kind as its peers.
   */
  public boolean consistent() {
    return !communicators.isEmpty()
        && communicators.stream().allMatch(c -> c.status().equals("RUNNING") && c.errors().equals("OK"))
        && mismatches.isEmpty() && dead.isEmpty() && missing.isEmpty() && otherProblems.isEmpty();
  }

  /** The ranks in all, across the communicators table's groups. */
  public int ranks() {
    return communicators.stream().mapToInt(CommunicatorRow::ranksInGroup).max().orElse(0);
  }

  /**
   * A row of the communicators table: a group of communicators alike in size, status and errors.
   *
   * @param group the group number ({@code #0-1} is communicator 1 of group 0)
   * @param comms communicators in the group
   * @param nodes nodes per communicator
   * @param ranksPerComm ranks per communicator
   * @param ranksInGroup distinct ranks (GPUs) over the group's communicators
   * @param status NOCOMM, INIT, RUNNING, FINALIZE or ABORT
   * @param errors OK, or a comma-separated list of MISMATCH, ERROR, INCOMPLETE
   */
  public record CommunicatorRow(int group, int comms, int nodes, int ranksPerComm, int ranksInGroup, String status,
      String errors) {}

  /**
   * A communicator whose ranks launched different numbers of one kind of collective.
   *
   * @param communicator {@code #group-index}, e.g. "#0-0"
   * @param commHash the communicator hash RAS prints, as NCCL's debug output prints it too
   * @param operation the collective ("AllGather"), or "collective" from NCCL versions that do not say
   * @param counts the ranks grouped by how many they launched, as RAS lists them (the largest group first)
   * @param source where the block starts
   */
  public record CountMismatch(String communicator, String commHash, String operation, List<LaunchCount> counts,
      String source) {
    public CountMismatch {
      counts = List.copyOf(counts);
    }

    /** The lowest count any rank launched: the ranks at it never launched the next one their peers did. */
    public long lowest() {
      return counts.stream().mapToLong(LaunchCount::launched).min().orElse(0);
    }

    /** The groups at the lowest count: the ranks behind. */
    public List<LaunchCount> behind() {
      long low = lowest();
      return counts.stream().filter(c -> c.launched() == low).toList();
    }

    /** The groups above the lowest count: ranks that launched collectives the others never did. */
    public List<LaunchCount> ahead() {
      long low = lowest();
      return counts.stream().filter(c -> c.launched() > low).toList();
    }

    /** "30 ranks launched up to AllGather 640 while ranks 12, 13 launched 641". */
    public String summary() {
      String op = operation.equals("collective") ? "operation" : operation;
      StringBuilder b = new StringBuilder();
      List<LaunchCount> behind = behind();
      for (int i = 0; i < behind.size(); i++) {
        b.append(i == 0 ? "" : ", ").append(behind.get(i).who()).append(" launched up to ").append(op).append(' ')
            .append(behind.get(i).launched());
      }
      List<LaunchCount> ahead = ahead();
      for (int i = 0; i < ahead.size(); i++) {
        b.append(i == 0 ? " while " : ", ").append(ahead.get(i).who()).append(" launched ")
            .append(ahead.get(i).launched());
      }
      return b.toString();
    }
  }

  /**
   * Ranks of one communicator at one count of launched collectives.
   *
   * @param ranks how many ranks
   * @param launched how many collectives of the kind each launched ("launched up to operation N"; 0 for "have not
   *     launched any operations")
   * @param listed the ranks RAS names, which it does only for groups small enough to be outliers; may be empty
   */
  public record LaunchCount(int ranks, long launched, List<RasRank> listed) {
    public LaunchCount {
      listed = List.copyOf(listed);
    }

    /** "ranks 12, 13" when all are named, else "30 ranks". */
    String who() {
      if (listed.size() == ranks && ranks > 0) {
        return (ranks == 1 ? "rank " : "ranks ") + String.join(", ", listed.stream()
            .map(r -> Integer.toString(r.rank())).toList());
      }
      return ranks + (ranks == 1 ? " rank" : " ranks");
    }
  }

  /**
   * A rank RAS names: {@code Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124}.
   *
   * @param rank its rank in the communicator
   * @param gpu its CUDA device as RAS prints it ("4", or "4 (5)" when the NVML index differs); empty when unknown
   * @param pid its process; -1 when RAS found no process information
   * @param node its node as RAS prints it (an address); empty when unknown
   */
  public record RasRank(int rank, String gpu, long pid, String node) {}

  /**
   * A process RAS names: {@code Process 3487984 on node 172.16.64.213 managing GPU 5}.
   *
   * @param pid the process
   * @param node its node as RAS prints it
   * @param gpus the GPUs it manages as printed ("5", "0-7")
   */
  public record RasProcess(long pid, String node, String gpus) {}
}
