package dev.frdiag.readers.context;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.exit.ProcessExit;
import dev.frdiag.readers.kernel.XidLine;
import dev.frdiag.readers.kernel.XidReader;
import dev.frdiag.readers.nccltests.NcclTestsReader;
import dev.frdiag.readers.ras.RasReport;
import dev.frdiag.readers.ras.RasReport.CommunicatorRow;
import dev.frdiag.readers.ras.RasReport.CountMismatch;
import dev.frdiag.readers.ras.RasReport.LaunchCount;
import dev.frdiag.readers.ras.RasReport.RasRank;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NodeLogFindingsTest {
  @TempDir
  Path dir;

  @Test
  void aCleanupCountsAsTheDeviceFaultItNamesOncePerGpuAndProcess() {
    List<ContextFinding> findings = NodeLogFindings.fromXids(List.of(
        xid("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid "
            + "149", 1),
        xid("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000002 caused by previous Xid "
            + "149", 2),
        xid("kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c caused by previous Xid "
            + "145", 3)));

    assertThat(findings).extracting(ContextFinding::getKind, ContextFinding::getGpuBusId, ContextFinding::getPid)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(ContextFinding.Kind.XID_DEVICE_FAULT, "0000:dc:00", 1818990L),
            org.assertj.core.groups.Tuple.tuple(ContextFinding.Kind.XID_DEVICE_FAULT, "0000:ed:00", 1818992L));
    assertThat(findings.get(0).getDetail()).isEqualTo("Xid 149 (NVLink NETIR error) on GPU 0000:dc:00, used by "
        + "python3 (pid 1818990), as its Xid 45 cleanup names it: \"NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, "
        + "name=python3, Ch 00000001 caused by previous Xid 149\"");
    assertThat(findings.get(0).getSource()).isEqualTo("kern.log:1");
    assertThat(findings.get(0).getRank()).isEqualTo(-1);
  }

  @Test
  void aFaultOnAGpuNoProcessIsNamedOnIsOnlyANoteAndACleanupWithoutCauseNothing() {
    List<ContextFinding> findings = NodeLogFindings.fromXids(List.of(
        xid("kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            1),
        xid("kernel: NVRM: Xid (PCI:0000:1b:00): 31, pid=4343, name=python3, Ch 00000001, intr 10000000", 2),
        xid("kernel: NVRM: Xid (PCI:0000:1b:00): 45, pid=4343, name=python3, Ch 00000001", 3),
        xid("kernel: NVRM: Xid (PCI:0000:1b:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit "
            + "error", 4)));

    assertThat(findings).extracting(ContextFinding::getKind, ContextFinding::getGpuBusId, ContextFinding::getPid)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(ContextFinding.Kind.NOTE, "0000:3b:00", 0L),
            org.assertj.core.groups.Tuple.tuple(ContextFinding.Kind.XID_APPLICATION_FAULT, "0000:1b:00", 4343L),
            // The pid of another line on the same GPU says a process used it.
            org.assertj.core.groups.Tuple.tuple(ContextFinding.Kind.XID_DEVICE_FAULT, "0000:1b:00", 4343L));
  }

  @Test
  void aDeathFromOutsideIsAFindingOncePerProcessWithWhatTheReportsName() {
    List<ContextFinding> findings = NodeLogFindings.fromExits(List.of(
        new ProcessExit(ProcessExit.Kind.SIGNALLED, "", 4710, -1, 9, "killed by signal 9 (SIGKILL)",
            "failed (exitcode: -9) local_rank: 4 (pid: 4710)", "log:3"),
        new ProcessExit(ProcessExit.Kind.SIGNALLED, "node-3", 4710, 12, 9, "killed by signal 9 (SIGKILL)",
            "exitcode  : -9 (pid: 4710)", "log:19"),
        new ProcessExit(ProcessExit.Kind.SIGNALLED, "node-3", 4711, 13, 15, "killed by signal 15 (SIGTERM)",
            "exitcode  : -15 (pid: 4711)", "log:10")));

    assertThat(findings).singleElement().extracting(ContextFinding::getKind, ContextFinding::getHost,
        ContextFinding::getRank, ContextFinding::getPid, ContextFinding::getDetail).containsExactly(
            ContextFinding.Kind.PROCESS_DIED, "node-3", 12, 4710L,
            "killed by signal 9 (SIGKILL): \"exitcode  : -9 (pid: 4710)\"");
  }

  @Test
  void ranksBehindAreLaunchLagsAndTheRanksAheadAreNeverNamed() {
    RasReport report = new RasReport("ras:4", 32, List.of(new CommunicatorRow(0, 1, 4, 32, 32, "RUNNING",
        "MISMATCH")), List.of(new CountMismatch("#0-0", "fa93daea854b060b", "AllGather", List.of(
            new LaunchCount(30, 640, List.of()), new LaunchCount(2, 641, List.of(
                new RasRank(12, "4", 323032, "10.137.190.124"), new RasRank(13, "5", 323033, "10.137.190.124")))),
        "ras:20")), List.of(), List.of(), List.of());

    assertThat(NodeLogFindings.fromRas(List.of(report))).singleElement()
        .extracting(ContextFinding::getKind, ContextFinding::getHost, ContextFinding::getRank,
            ContextFinding::getDetail, ContextFinding::getSource)
        .containsExactly(ContextFinding.Kind.LAUNCH_LAG, "", -1, "30 ranks launched up to AllGather 640 while ranks "
            + "12, 13 launched 641: \"#0-0 (fa93daea854b060b) MISMATCH: Communicator ranks have different AllGather "
            + "operation counts\"", "ras:20");
  }

  @Test
  void aNamedRankBehindIsTheGlobalRankOnlyWhenItsCommunicatorSpansTheJob() {
    CountMismatch m = new CountMismatch("#1-0", "78db", "AllReduce", List.of(new LaunchCount(7, 64, List.of()),
        new LaunchCount(1, 60, List.of(new RasRank(7, "3", 1650386, "node1")))), "ras:9");
    RasReport whole = new RasReport("ras:1", 8, List.of(new CommunicatorRow(1, 1, 2, 8, 8, "RUNNING", "MISMATCH")),
        List.of(m), List.of(), List.of(), List.of());
    RasReport part = new RasReport("ras:1", 16, List.of(new CommunicatorRow(1, 2, 2, 8, 16, "RUNNING", "MISMATCH")),
        List.of(m), List.of(), List.of(), List.of());

    assertThat(NodeLogFindings.fromRas(List.of(whole))).singleElement().extracting(ContextFinding::getRank,
        ContextFinding::getHost, ContextFinding::getPid, ContextFinding::getDevice)
        .containsExactly(7, "node1", 1650386L, 3);
    assertThat(NodeLogFindings.fromRas(List.of(part))).singleElement().extracting(ContextFinding::getRank)
        .isEqualTo(-1);
  }

  @Test
  void readsTheKernelLauncherAndRasLinesOfAFileInOnePassPerNode() throws Exception {
    Path log = dir.resolve("node.log");
    Files.writeString(log, String.join("\n",
        "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
        "Mar  3 10:00:01 gpu-7 kernel: Out of memory: Killed process 90210 (python3) total-vm:8kB",
        "Job summary",
        "===========",
        "Communicators... (0.01s)",
        "    0         1        32         8       256       256   RUNNING      OK",
        "") + "\n");

    List<NodeContext> nodes = NodeLogs.read("job", log);

    assertThat(nodes).extracting(NodeContext::getHostname).containsExactly("", "gpu-7");
    assertThat(nodes.get(0).getFindingsList()).extracting(ContextFinding::getKind)
        .containsExactly(ContextFinding.Kind.XID_DEVICE_FAULT, ContextFinding.Kind.RAS_CONSISTENT);
    assertThat(nodes.get(1).getFindingsList()).extracting(ContextFinding::getKind, ContextFinding::getPid)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(ContextFinding.Kind.PROCESS_DIED, 90210L));
    assertThat(nodes).allMatch(n -> n.getJobId().equals("job"));
    Files.writeString(log, "nothing of interest\n");
    assertThat(NodeLogs.read("job", log)).isEmpty();
  }

  private static XidLine xid(String line, int number) {
    return XidReader.parse(line, "kern.log:" + number);
  }

  /**
   * Sizes an nccl-tests run measured with every value right are collectives that completed, closing lines or not;
   * one size alone is no run going on (rows of NVIDIA/nccl-tests#293, as posted).
   */
  @Test
  void ncclTestsRowsWithEveryValueRightAreProgressAndOneRowIsNot() {
    NcclTestsReader reader = new NcclTestsReader();
    reader.accept("           8             2     float     sum      -1    17.08    0.00    0.00      0    16.76    "
        + "0.00    0.00      0", "t.log:1");
    reader.accept("          16             4     float     sum      -1    16.72    0.00    0.00      0    16.66    "
        + "0.00    0.00      0", "t.log:2");
    assertThat(NodeLogFindings.fromNcclTests(reader.finish())).singleElement()
        .satisfies(f -> assertThat(f.getKind()).isEqualTo(ContextFinding.Kind.PROGRESS));

    NcclTestsReader one = new NcclTestsReader();
    one.accept("           8             2     float     sum      -1    17.08    0.00    0.00      0    16.76    "
        + "0.00    0.00      0", "t.log:1");
    assertThat(NodeLogFindings.fromNcclTests(one.finish())).singleElement()
        .satisfies(f -> assertThat(f.getKind()).isEqualTo(ContextFinding.Kind.NOTE));
  }
}
