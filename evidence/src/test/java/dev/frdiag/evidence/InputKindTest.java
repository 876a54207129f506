package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InputKindTest {
  @TempDir
  Path dir;

  @Test
  void aKernelLogWithXidOrOomKillerLinesIsAKernelLog() throws Exception {
    assertThat(kindOf("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001\n"))
        .isEqualTo(InputKind.KERNEL_LOG);
    assertThat(kindOf("Mar  3 10:00:01 gpu-7 kernel: Out of memory: Killed process 90210 (python3)\n"))
        .isEqualTo(InputKind.KERNEL_LOG);
    assertThat(kindOf("Mar  3 10:00:01 gpu-7 kernel: usb 1-1: new high-speed USB device\n"))
        .isEqualTo(InputKind.UNKNOWN);
  }

  @Test
  void networkPluginLinesAndRasReportsAreNcclsAndLauncherReportsTrainingLogs() throws Exception {
    assertThat(kindOf("libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5\n"))
        .isEqualTo(InputKind.NCCL_LOG);
    assertThat(kindOf("Job summary\n===========\n\nCommunicators... (0.01s)\n")).isEqualTo(InputKind.NCCL_LOG);
    assertThat(kindOf("  traceback : Signal 9 (SIGKILL) received by PID 4710\n")).isEqualTo(InputKind.TRAINING_LOG);
    assertThat(kindOf("(raylet) A worker died or was killed while executing a task by an unexpected system "
        + "error.\n")).isEqualTo(InputKind.TRAINING_LOG);
    assertThat(InputKind.KERNEL_LOG.isLog()).isTrue();
    assertThat(InputKind.JSON_DUMP.isLog()).isFalse();
  }

  @Test
  void aDumpsJsonIsToldByItsFirstKeyAndATraceByItsOwnWhereverItsPgConfigIs() throws Exception {
    String groups = "\"0\": {\"name\": \"0\", \"desc\": \"default_pg\", \"ranks\": \"[0, 1]\"}, ".repeat(500);
    assertThat(kindOf("{\"comm_lib_version\": \"\", \"entries\": [], \"pg_config\": {" + groups + "}}"))
        .isEqualTo(InputKind.JSON_DUMP);
    assertThat(kindOf("{\"version\": \"2.10\", \"pg_config\": {" + groups + "}, \"entries\": []}"))
        .isEqualTo(InputKind.JSON_DUMP);
    // A trace's distributedInfo holds a pg_config too, long before its events when the job has many groups.
    assertThat(kindOf("{\"schemaVersion\": 1, \"deviceProperties\": [], \"distributedInfo\": {\"rank\": 0, "
        + "\"pg_config\": {" + groups + "}}, \"traceEvents\": []}")).isEqualTo(InputKind.PROFILER_TRACE);
    // Read as a dump, and refused as one with what is wrong with it.
    assertThat(kindOf("{\"entries\": \"not a list\"}")).isEqualTo(InputKind.JSON_DUMP);
    assertThat(kindOf("{\"name\": \"a job's settings\"}")).isEqualTo(InputKind.UNKNOWN);
    assertThat(InputKind.JSON_DUMP.isDump()).isTrue();
    assertThat(InputKind.PROFILER_TRACE.isDump()).isFalse();
  }

  private InputKind kindOf(String text) throws Exception {
    Path f = Files.createTempFile(dir, "input", ".log");
    Files.writeString(f, text);
    return InputKind.of(f);
  }
}
