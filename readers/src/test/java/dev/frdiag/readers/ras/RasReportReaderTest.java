package dev.frdiag.readers.ras;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.readers.ras.RasReport.LaunchCount;
import dev.frdiag.readers.ras.RasReport.RasProcess;
import dev.frdiag.readers.ras.RasReport.RasRank;
import java.util.List;
import org.junit.jupiter.api.Test;

class RasReportReaderTest {
  private static final String SUMMARY = """
      NCCL version 2.26.2 compiled with CUDA 12.6
      CUDA runtime version 12060, driver version 12060

      Job summary
      ===========

        Nodes  Processes         GPUs  Processes     GPUs
      (total)   per node  per process    (total)  (total)
            4          8            1         32       32

      Communicators... (0.00s)
      =============

      Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
          #  in group  per comm  per node  per comm  in group
      """;

  @Test
  void readsWhichRanksLaunchedMoreCollectivesThanTheOthers() {
    List<RasReport> reports = read(SUMMARY + """
            0         1         4         8        32        32   RUNNING  MISMATCH

        Errors
        ======

        Warnings
        ========

        #0-0 (fa93daea854b060b) MISMATCH
          Communicator ranks have different AllGather operation counts
          30 ranks have launched up to operation 640
          2 ranks have launched up to operation 641
          Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124
          Rank 13 -- GPU 5 managed by process 323033 on node 10.137.190.124
        """);

    RasReport r = reports.get(0);
    assertThat(reports).hasSize(1);
    assertThat(r.source()).isEqualTo("ras:4");
    assertThat(r.jobRanks()).isEqualTo(32);
    assertThat(r.communicators()).containsExactly(new RasReport.CommunicatorRow(0, 1, 4, 32, 32, "RUNNING",
        "MISMATCH"));
    assertThat(r.consistent()).isFalse();
    RasReport.CountMismatch m = r.mismatches().get(0);
    assertThat(m.communicator()).isEqualTo("#0-0");
    assertThat(m.commHash()).isEqualTo("fa93daea854b060b");
    assertThat(m.operation()).isEqualTo("AllGather");
    assertThat(m.counts()).containsExactly(new LaunchCount(30, 640, List.of()), new LaunchCount(2, 641,
        List.of(new RasRank(12, "4", 323032, "10.137.190.124"), new RasRank(13, "5", 323033, "10.137.190.124"))));
    // The ranks behind are the 30 RAS does not name; the two it names launched one more.
    assertThat(m.behind()).containsExactly(new LaunchCount(30, 640, List.of()));
    assertThat(m.summary()).isEqualTo("30 ranks launched up to AllGather 640 while ranks 12, 13 launched 641");
  }

  @Test
  void namesASingleRankBehindFromItsOwnLine() {
    RasReport r = read(SUMMARY + """
            0         1         2         4         8         8   RUNNING  MISMATCH

        Warnings
        ========

        #0-0 (78db921d1c117b4a) MISMATCH
          Communicator ranks have different AllReduce operation counts
          7 ranks have launched up to operation 64
          Rank 7 has launched up to operation 60 -- GPU 3 managed by process 1650386 on node node1
        """).get(0);

    RasReport.CountMismatch m = r.mismatches().get(0);
    assertThat(m.behind()).containsExactly(new LaunchCount(1, 60, List.of(new RasRank(7, "3", 1650386, "node1"))));
    assertThat(m.summary()).isEqualTo("rank 7 launched up to AllReduce 60 while 7 ranks launched 64");
  }

  @Test
  void aReportWithEveryCommunicatorRunningAndNothingWrongIsConsistentWhateverFollowsIt() {
    RasReport r = read(SUMMARY + """
            0         1        32         8       256       256   RUNNING      OK

        Errors
        ======

        Warnings
        ========

        [rank118]:[E603 17:48:01.005271823 ProcessGroupNCCL.cpp:632] [Rank 118] Watchdog caught collective operation timeout
        """).get(0);

    assertThat(r.consistent()).isTrue();
    assertThat(r.ranks()).isEqualTo(256);
  }

  @Test
  void readsDeadAndMissingProcessesAndOtherErrors() {
    RasReport r = read(SUMMARY + """
            0         1         4         8        32        32   RUNNING  INCOMPLETE,ERROR

        Errors
        ======

        INCOMPLETE
          Missing communicator data from 1 job process
          Process 3487985 on node 172.16.64.214 managing GPU 6

        DEAD
          1 job process is considered dead (unreachable via the RAS network)
          Process 3487984 on node 172.16.64.213 managing GPU 5

        #0-0 (27a079b828ff1a75) ERROR
          Asynchronous errors on 2 ranks
          2 ranks reported remote process exited or there was a network error
        """).get(0);

    assertThat(r.consistent()).isFalse();
    assertThat(r.dead()).containsExactly(new RasProcess(3487984, "172.16.64.213", "5"));
    assertThat(r.missing()).containsExactly(new RasProcess(3487985, "172.16.64.214", "6"));
    assertThat(r.otherProblems()).containsExactly("#0-0 (27a079b828ff1a75) ERROR",
        "#0-0: Asynchronous errors on 2 ranks");
  }

  private static List<RasReport> read(String text) {
    RasReportReader reader = new RasReportReader();
    String[] lines = text.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      reader.accept(lines[i], "ras:" + (i + 1));
    }
    return reader.finish();
  }
}
