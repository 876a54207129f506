package dev.frdiag.readers.exit;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ProcessExitReaderTest {
  @Test
  void readsTheRootCauseOfTorchElasticsFailureTableOnce() {
    List<ProcessExit> exits = read(
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "[1]:",
        "  time      : 2024-05-01_10:00:09",
        "  host      : node-3",
        "  rank      : 13 (local_rank: 5)",
        "  exitcode  : -15 (pid: 4711)",
        "  error_file: <N/A>",
        "  traceback : Signal 15 (SIGTERM) received by PID 4711",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-05-01_10:00:01",
        "  host      : node-3",
        "  rank      : 12 (local_rank: 4)",
        "  exitcode  : -9 (pid: 4710)",
        "  error_file: <N/A>",
        "  traceback : Signal 9 (SIGKILL) received by PID 4710",
        "============================================================");

    assertThat(exits).extracting(ProcessExit::host, ProcessExit::rank, ProcessExit::pid, ProcessExit::signal,
        ProcessExit::fromOutside).containsExactly(
            org.assertj.core.groups.Tuple.tuple("node-3", 13, 4711L, 15, false),
            org.assertj.core.groups.Tuple.tuple("node-3", 12, 4710L, 9, true));
    assertThat(exits.get(1).detail()).isEqualTo("killed by signal 9 (SIGKILL)");
    assertThat(exits.get(1).source()).isEqualTo("log:19");
  }

  @Test
  void anAbortIsPyTorchTakingItsOwnProcessDownNotADeathFromOutside() {
    List<ProcessExit> exits = read("[2024-05-01 10:00:01,123] torch.distributed.elastic.multiprocessing.api: "
        + "[ERROR] failed (exitcode: -6) local_rank: 0 (pid: 812) of binary: /usr/bin/python3",
        "[2024-05-01 10:00:01,124] failed (exitcode: 1) local_rank: 1 (pid: 813) of binary: /usr/bin/python3",
        "Signal 11 (SIGSEGV) received by PID 814");

    assertThat(exits).extracting(ProcessExit::pid, ProcessExit::signal, ProcessExit::fromOutside)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(812L, 6, false),
            org.assertj.core.groups.Tuple.tuple(814L, 11, true));
  }

  @Test
  void readsTheKernelsOomKillerWithTheSyslogHost() {
    List<ProcessExit> exits = read("Mar  3 10:00:01 gpu-7 kernel: [81234.5] Out of memory: Killed process 90210 "
        + "(python3) total-vm:812345678kB, anon-rss:123kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1kB "
        + "oom_score_adj:0", "kernel: Killed process 5 (sshd) by an operator");

    assertThat(exits).singleElement().extracting(ProcessExit::kind, ProcessExit::host, ProcessExit::pid,
        ProcessExit::detail, ProcessExit::fromOutside).containsExactly(ProcessExit.Kind.OOM_KILLED, "gpu-7", 90210L,
        "the kernel's OOM killer killed process 90210 (python3)", true);
  }

  @Test
  void readsRaysDeadWorkerWithItsAddressAndPid() {
    List<ProcessExit> exits = read("(raylet) A worker died or was killed while executing a task by an unexpected "
        + "system error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffff Worker ID: "
        + "d893 Node ID: 8440 Worker IP address: 172.19.24.110 Worker port: 10185 Worker PID: 90738 Worker exit type:"
        + " SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2.");

    assertThat(exits).singleElement().extracting(ProcessExit::kind, ProcessExit::host, ProcessExit::pid,
        ProcessExit::rank, ProcessExit::detail, ProcessExit::fromOutside).containsExactly(
            ProcessExit.Kind.WORKER_DIED, "172.19.24.110", 90738L, -1,
            "Ray reports its worker died or was killed (SYSTEM_ERROR)", true);
  }

  @Test
  void aRayWorkerWhoseOwnWatchdogTimedOutWasAbortedNotKilled() {
    // vllm-project/vllm#1846: Ray reports worker 1080651 dead before it prints that worker's own lines.
    String died = "2023-11-30 10:19:23,769 WARNING worker.py:2074 -- A worker died or was killed while executing a "
        + "task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. RayTask"
        + " ID: ffffffffffffffffba61971047f999e0f9ceaab101000000 Worker ID: 0e4b1eeade4874f7080db5807059e066cc128f27de4"
        + "d1404a6057750 Node ID: 9c6f827858d621904b3d1cfb06057c57480da46c3edab524030f1e58 Worker IP address: "
        + "10.9.70.181 Worker port: 34011 Worker PID: 1080651 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker"
        + " unexpectedly exits with a connection error code 2. End of file.";
    String timedOut = "(RayWorker pid=1080651) [E ProcessGroupNCCL.cpp:474] [Rank 0] Watchdog caught collective "
        + "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran "
        + "for 1800305 milliseconds before timing out.";
    String otherWorker = timedOut.replace("pid=1080651", "pid=1080652");

    assertThat(read(died, timedOut)).singleElement().extracting(ProcessExit::kind, ProcessExit::pid,
        ProcessExit::fromOutside).containsExactly(ProcessExit.Kind.WORKER_ABORTED, 1080651L, false);
    // Another worker's timeout says nothing of how this one died; nor does the same pid on another host.
    assertThat(read(died, otherWorker)).singleElement().extracting(ProcessExit::kind, ProcessExit::fromOutside)
        .containsExactly(ProcessExit.Kind.WORKER_DIED, true);
    String elsewhere = timedOut.replace("(RayWorker pid=1080651)", "(RayWorker pid=1080651, ip=10.9.70.182)");
    String sameHost = timedOut.replace("(RayWorker pid=1080651)", "(RayWorker pid=1080651, ip=10.9.70.181)");
    assertThat(read(died, elsewhere)).singleElement().extracting(ProcessExit::kind)
        .isEqualTo(ProcessExit.Kind.WORKER_DIED);
    assertThat(read(sameHost, died)).singleElement().extracting(ProcessExit::kind)
        .isEqualTo(ProcessExit.Kind.WORKER_ABORTED);
  }

  private static List<ProcessExit> read(String... lines) {
    ProcessExitReader reader = new ProcessExitReader();
    for (int i = 0; i < lines.length; i++) {
      reader.accept(lines[i], "log:" + (i + 1));
    }
    return reader.exits();
  }
}
