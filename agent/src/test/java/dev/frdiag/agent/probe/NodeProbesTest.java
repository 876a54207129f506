package dev.frdiag.agent.probe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.ContextFinding;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The probes run as programs on the node: fake executables print what the real ones print (the kernel's Xid lines
 * from NVIDIA/open-gpu-kernel-modules#1150, an NCCL RAS report from NVIDIA/nccl#1911, both kept verbatim in the
 * cli module's corpus with their attribution).
 */
class NodeProbesTest {
  private static final String DMESG = """
      [ 8123.456789] NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149
      [ 8123.456901] NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c caused by previous Xid 145
      """;

  private static final String RAS = """
      NCCL version 2.26.2 compiled with CUDA 12.6
      Job summary
      ===========

        Nodes  Processes         GPUs  Processes     GPUs
      (total)   per node  per process    (total)  (total)
            4          8            1         32       32

      Communicators... (0.00s)
      =============

      Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
          #  in group  per comm  per node  per comm  in group
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
      """;

  @TempDir
  Path dir;

  @Test
  void theKernelsXidLinesAndARasReportBecomeFindings() throws IOException {
    NodeProbes probes = new NodeProbes(List.of(new NodeProbe("dmesg", List.of(script("dmesg", DMESG))),
        new NodeProbe("ncclras", List.of(script("ncclras", RAS)))), Duration.ofSeconds(10));

    List<ContextFinding> found = probes.runAll();

    assertThat(found).filteredOn(f -> f.getKind() == ContextFinding.Kind.XID_DEVICE_FAULT)
        .extracting(ContextFinding::getGpuBusId).contains("0000:dc:00", "0000:ed:00");
    assertThat(found).filteredOn(f -> f.getKind() == ContextFinding.Kind.XID_DEVICE_FAULT)
        .allSatisfy(f -> assertThat(f.getSource()).startsWith("dmesg:"));
    assertThat(found).anySatisfy(f -> {
      assertThat(f.getKind()).isEqualTo(ContextFinding.Kind.LAUNCH_LAG);
      assertThat(f.getSource()).startsWith("ncclras:");
    });
    probes.close();
  }

  @Test
  void aPendingRowRemapOnTheGpuOfAProcessIsAGpuFaultOnThatProcess() throws IOException {
    // The memory lines as posted in leptonai/gpud#80, in nvidia-smi -q's GPU section.
    String smi = "==============NVSMI LOG==============\n\nGPU 00000000:DC:00.0\n    Remapped Rows\n"
        + "        Correctable Error                 : 0\n        Uncorrectable Error               : 4\n"
        + "        Pending                           : Yes\n    Processes\n"
        + "        Process ID                        : 4242\n";
    NodeProbes probes = new NodeProbes(List.of(new NodeProbe("nvidia-smi", List.of(script("smi", smi)))),
        Duration.ofSeconds(10));

    assertThat(probes.runAll()).singleElement().satisfies(f -> {
      assertThat(f.getKind()).isEqualTo(ContextFinding.Kind.GPU_FAULT);
      assertThat(f.getPid()).isEqualTo(4242);
      assertThat(f.getGpuBusId()).isEqualTo("0000:dc:00");
      assertThat(f.getDetail()).contains("Remapped Rows: Pending: Yes");
    });
    probes.close();
  }

  @Test
  void aProbeThatIsMissingOrOverrunsGivesNothingAndHoldsUpNothingElse() throws Exception {
    NodeProbes probes = new NodeProbes(List.of(new NodeProbe("absent", List.of(dir.resolve("no-such").toString())),
        new NodeProbe("slow", List.of(script("slow", null))), new NodeProbe("dmesg", List.of(script("dmesg", DMESG)))),
        Duration.ofMillis(500));
    CountDownLatch done = new CountDownLatch(1);

    probes.refresh(Duration.ZERO, done::countDown);

    assertThat(done.await(10, TimeUnit.SECONDS)).as("the run ends despite a probe that never does").isTrue();
    assertThat(probes.latest()).isNotEmpty().allSatisfy(f -> assertThat(f.getSource()).startsWith("dmesg:"));
    probes.close();
  }

  @Test
  void aFreshRunIsNotRepeated() throws Exception {
    NodeProbes probes = new NodeProbes(List.of(new NodeProbe("dmesg", List.of(script("dmesg", DMESG)))),
        Duration.ofSeconds(10));
    CountDownLatch first = new CountDownLatch(1);
    probes.refresh(Duration.ofMinutes(1), first::countDown);
    assertThat(first.await(10, TimeUnit.SECONDS)).isTrue();

    CountDownLatch second = new CountDownLatch(1);
    probes.refresh(Duration.ofMinutes(1), second::countDown);
    assertThat(second.await(300, TimeUnit.MILLISECONDS)).as("no second run within a minute").isFalse();
    probes.close();
  }

  @Test
  void probesAreParsedFromTheirOptionText() {
    assertThat(NodeProbe.parse("dmesg")).isEqualTo(new NodeProbe("dmesg", List.of("dmesg")));
    assertThat(NodeProbe.parse("kernel=journalctl -k --since -15min")).isEqualTo(
        new NodeProbe("kernel", List.of("journalctl", "-k", "--since", "-15min")));
  }

  /** An executable printing {@code text}, or sleeping a minute when it is null. */
  private String script(String name, String text) throws IOException {
    Path out = dir.resolve(name + ".txt");
    Path exe = dir.resolve(name);
    String body;
    if (text == null) {
      body = "#!/bin/sh\nexec sleep 60\n";
    } else {
      Files.writeString(out, text);
      body = "#!/bin/sh\ncat '" + out + "'\n";
    }
    Files.writeString(exe, body);
    Files.setPosixFilePermissions(exe, PosixFilePermissions.fromString("rwx------"));
    return exe.toString();
  }
}
