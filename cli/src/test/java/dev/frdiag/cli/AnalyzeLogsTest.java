package dev.frdiag.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code fr-diagnose analyze} on the real NCCL and watchdog log excerpts: each yields the reading the samples state. */
class AnalyzeLogsTest {

  private record Result(int code, JsonNode report, String err) {}

  private static Result analyze(Path... files) throws Exception {
    List<String> args = new ArrayList<>(List.of("--json", "analyze", "-q"));
    for (Path f : files) {
      args.add(f.toString());
    }
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDiagnose.run(args.toArray(String[]::new), new PrintWriter(out), new PrintWriter(err));
    return new Result(code, out.toString().isBlank() ? null : new ObjectMapper().readTree(out.toString()),
        err.toString());
  }

  private static Path sample(String name) throws Exception {
    return Path.of(AnalyzeLogsTest.class.getResource("/nccl_logs/" + name).toURI());
  }

  private static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.isTextual() ? n.asText() : n.toString()));
    return out;
  }

  @Test
  void outOfMemoryOnOneGpuIsAGpuStallThoughItsPeerComplainedFirst() throws Exception {
    Result r = analyze(sample("nccl1235-oom-then-socket-closed.log"));
    assertThat(r.report().get("symptom").asText()).isEqualTo("GPU_STALL");
    assertThat(texts(r.report().get("culprit_hosts"))).containsExactly("ng30903");
    assertThat(r.report().get("headline").asText()).contains("GPU 3");
    assertThat(r.code()).isEqualTo(ExitCode.HANG);
  }

  @Test
  void statusTwelveFromOnePeerIsTheFabricAndNamesThePeer() throws Exception {
    JsonNode report = analyze(sample("nccl1405-ib-status12-roce-recv.log")).report();
    assertThat(report.get("symptom").asText()).isEqualTo("FABRIC");
    assertThat(texts(report.get("culprit_hosts"))).contains("10.216.210.236");
    assertThat(report.get("culprit_ranks").size()).isZero();
    assertThat(report.get("evidence").get(0).get("detail").asText()).contains("status 12");
  }

  @Test
  void localProtectionErrorIsTheReportingHostsNetworkNotTheFabric() throws Exception {
    JsonNode report = analyze(sample("nccltests252-2node-8rank-ib-err4.log")).report();
    assertThat(report.get("symptom").asText()).isEqualTo("NODE_NETWORK");
    assertThat(texts(report.get("culprit_hosts"))).containsExactly("kolyoz2");
  }

  @Test
  void logsWithoutAFailureSupportNoVerdictAndSaySo() throws Exception {
    for (String name : List.of("nccl1232-socket-2node-4rank-init.log", "nccl1197-nvls-hang-topology.log")) {
      Result r = analyze(sample(name));
      assertThat(r.report().get("verdict").asText()).as(name).isEqualTo("INSUFFICIENT_EVIDENCE");
      assertThat(r.code()).isEqualTo(ExitCode.INSUFFICIENT_EVIDENCE);
      assertThat(r.report().get("evidence").toString()).as(name).contains("show no failure");
    }
    assertThat(analyze(sample("nccl1232-socket-2node-4rank-init.log")).report().get("evidence").toString())
        .contains("no RDMA NIC, Socket in use");
    assertThat(analyze(sample("nccl1197-nvls-hang-topology.log")).report().get("evidence").toString())
        .contains("GPU to NIC affinity", "PIX 24.0 GB/s");
  }

  @Test
  void watchdogLinesWhereEveryVisibleRankIssuedTheCollectiveAreNotACpuStall() throws Exception {
    JsonNode report = analyze(sample("llamafactory7396-watchdog-allreduce.log")).report();
    assertThat(report.get("verdict").asText()).isEqualTo("INSUFFICIENT_EVIDENCE");
    assertThat(report.get("culprit_ranks").size()).isZero();
    assertThat(report.get("collective").get("seq").asLong()).isEqualTo(1580);
  }

  @Test
  void aRankThatRanFarAheadOfTheStuckCollectiveIsNotTheCulprit() throws Exception {
    JsonNode report = analyze(sample("clmvsnet14-syncbn-enqueued-ahead.log")).report();
    assertThat(report.get("symptom").asText()).isEqualTo("CPU_STALL");
    assertThat(report.get("culprit_ranks").size()).isZero();
    assertThat(report.get("headline").asText()).contains("rank 0 is not the culprit");
    assertThat(report.get("collective").get("seq").asLong()).isEqualTo(716);
  }

  @Test
  void garbageIsOneClearLineAndNoCrash(@TempDir Path dir) throws Exception {
    Path junk = dir.resolve("core.bin");
    byte[] bytes = new byte[4096];
    new java.util.Random(7).nextBytes(bytes);
    Files.write(junk, bytes);
    Result r = analyze(junk);
    assertThat(r.code()).isEqualTo(ExitCode.INSUFFICIENT_EVIDENCE);
    assertThat(r.err()).contains(junk + ": not a Flight Recorder dump, stack dump or log this reader knows; skipped")
        .contains("looked for PyTorch watchdog").contains("found text starting").contains("nothing to analyse");
    assertThat(analyze(dir.resolve("missing")).code()).isEqualTo(ExitCode.USAGE);
  }

  @Test
  void ranksTimingOutInDifferentCollectivesAtOneSeqAreAMismatchFromTheLogsAlone(@TempDir Path dir)
      throws Exception {
    Path log = dir.resolve("train.log");
    Files.writeString(log, String.join("\n",
        "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90, "
            + "OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1801750 milliseconds before timing out.",
        "[E ProcessGroupNCCL.cpp:737] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90, "
            + "OpType=REDUCE, Timeout(ms)=1800000) ran for 1801377 milliseconds before timing out.",
        "[E ProcessGroupNCCL.cpp:737] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90, "
            + "OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1801790 milliseconds before timing out.", ""));
    JsonNode report = analyze(log).report();
    assertThat(report.get("verdict").asText()).isEqualTo("HANG");
    assertThat(report.get("symptom").asText()).isEqualTo("MISMATCH");
    assertThat(texts(report.get("culprit_ranks"))).containsExactly("0");
  }

  @Test
  void aTimeoutWithNothingElseIsNeverNoHang(@TempDir Path dir) throws Exception {
    Path log = dir.resolve("train.log");
    Files.writeString(log, "[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation timeout: "
        + "WorkNCCL(SeqNum=316, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1806281 milliseconds before timing "
        + "out.\n");
    Result r = analyze(log);
    assertThat(r.report().get("verdict").asText()).isEqualTo("INSUFFICIENT_EVIDENCE");
    assertThat(r.code()).isEqualTo(ExitCode.INSUFFICIENT_EVIDENCE);
    assertThat(r.report().get("confidence").asDouble()).isLessThanOrEqualTo(0.4);
  }

  @Test
  void pytorchsOwnCollectiveCheckerIsAMismatch(@TempDir Path dir) throws Exception {
    Path log = dir.resolve("train.log");
    Files.writeString(log, "[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is "
        + "running collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[195812480], "
        + "TensorDtypes=BFloat16), but Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=3104, "
        + "OpType=ALLREDUCE, TensorShape=[51123456], TensorDtypes=BFloat16).\n");
    JsonNode report = analyze(log).report();
    assertThat(report.get("verdict").asText()).isEqualTo("HANG");
    assertThat(report.get("symptom").asText()).isEqualTo("MISMATCH");
    assertThat(report.get("confidence").asDouble()).isLessThan(0.9);
  }

  @Test
  void collLinesWhereOneProcessStoppedShortNameTheLaggardOnceTheJobIsKnownHung(@TempDir Path dir) throws Exception {
    Path nccl = Files.writeString(dir.resolve("nccl.log"), collLinesWithRank2StoppingAt4());

    JsonNode alone = analyze(nccl).report();
    // A log cut from a running job shows the same spread: the best reading, not a finding.
    assertThat(alone.get("verdict").asText()).isEqualTo("INSUFFICIENT_EVIDENCE");
    assertThat(alone.get("symptom").asText()).isEqualTo("CPU_STALL");
    assertThat(alone.get("culprit_ranks")).isEmpty();
    assertThat(alone.get("headline").asText()).startsWith("Probably: Rank 2 (n2) stopped launching collectives");

    Path train = Files.writeString(dir.resolve("train.log"), "[rank0]:[E1122 06:40:00.504052851 "
        + "ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
        + "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600080 milliseconds "
        + "before timing out.\n");
    JsonNode hung = analyze(nccl, train).report();
    assertThat(hung.get("verdict").asText()).isEqualTo("HANG");
    assertThat(hung.get("symptom").asText()).isEqualTo("CPU_STALL");
    assertThat(texts(hung.get("culprit_ranks"))).containsExactly("2");
    assertThat(hung.get("confidence").asDouble()).isEqualTo(0.4);
    assertThat(hung.get("headline").asText()).startsWith("Rank 2 (n2) launched fewer collectives than its peers");
  }

  /** NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL: rank 2 of a 3-rank world communicator stops after opCount 4. */
  private static String collLinesWithRank2StoppingAt4() {
    StringBuilder text = new StringBuilder();
    for (int r = 0; r < 3; r++) {
      text.append("n").append(r).append(":1").append(r).append(":1 [0] NCCL INFO ncclCommInitRank comm 0x").append(r)
          .append("f rank ").append(r).append(" nranks 3 cudaDev 0 nvmlDev 0 busId 1000 commId 0x77 - Init COMPLETE\n");
    }
    for (int op = 0; op < 7; op++) {
      for (int r = 0; r < 3; r++) {
        if (r != 2 || op <= 4) {
          text.append("n").append(r).append(":1").append(r).append(":1 [0] NCCL INFO AllReduce: opCount ")
              .append(Integer.toHexString(op)).append(" sendbuff 0x7f00 recvbuff 0x7f00 count 1048576 datatype 7 ")
              .append("op 0 root 0 comm 0x").append(r).append("f [nranks=3] stream 0x55\n");
        }
      }
    }
    return text.toString();
  }

  /**
   * The rank that signalled its own timeout is idle on PG 0, whose counters the dump signal prints: the timed-out
   * collective is on another group, so rank 0's idleness there names no culprit (vllm-project/vllm-omni#2928).
   */
  @Test
  void anIdleRankThatSignalledItsOwnTimeoutPointsAtAnotherGroupNotAtItsPeers(@TempDir Path dir) throws Exception {
    Path log = Files.writeString(dir.resolve("serve.log"), String.join("\n",
        "[rank1]:[E418 01:32:50.907313453 ProcessGroupNCCL.cpp:1890] [PG ID 0 PG GUID 0(default_pg) Rank 1] Received "
            + "a dump signal due to a collective timeout from this local rank and we will try our best to dump the "
            + "debug info. Last enqueued NCCL work: 233659, last completed NCCL work: 233659.",
        "[rank0]:[E418 01:32:50.907342463 ProcessGroupNCCL.cpp:1890] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received "
            + "a dump signal due to a collective timeout from  rank 1 and we will try our best to dump the debug "
            + "info. Last enqueued NCCL work: 233659, last completed NCCL work: 233659."));
    Result r = analyze(log);
    assertThat(r.report().get("verdict").asText()).isEqualTo("INSUFFICIENT_EVIDENCE");
    assertThat(texts(r.report().get("culprit_ranks"))).isEmpty();
  }

  /**
   * NCCL's shared-memory transport failing on one host, quoted after "Last error:" behind the launcher's rank tag
   * (hiyouga/LLaMA-Factory#7233, as posted), is a fault of that host.
   */
  @Test
  void aSharedMemorySegmentNcclCouldNotCreateIsAFaultOfItsHost(@TempDir Path dir) throws Exception {
    Path log = Files.writeString(dir.resolve("train.log"), String.join("\n",
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            + "NCCLUtils.hpp:268, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
        "[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
            + "error. ",
        "[rank1]: Last error:",
        "[rank1]: Error while creating shared memory segment /dev/shm/nccl-LeXlEJ (size 9637888)"));
    Result r = analyze(log);
    assertThat(r.report().get("symptom").asText()).isEqualTo("NODE_NETWORK");
    assertThat(r.report().get("headline").asText()).contains("shared memory");
  }

  /**
   * A log of PyTorch's distributed start-up lines only (pytorch/pytorch#88000, as posted) is known and says nothing
   * of a collective: a report saying so, not "nothing to analyse".
   */
  @Test
  void aLogOfDistributedStartUpLinesOnlyIsReadNotNothing(@TempDir Path dir) throws Exception {
    Path log = Files.writeString(dir.resolve("run.log"), String.join("\n",
        "WARNING: Logging before InitGoogleLogging() is written to STDERR",
        "I1028 12:13:38.405081 632355 ProcessGroupNCCL.cpp:843] [Rank 0] NCCL watchdog thread started!"));
    Result r = analyze(log);
    assertThat(r.report().get("verdict").asText()).isEqualTo("INSUFFICIENT_EVIDENCE");
    assertThat(r.report().toString()).contains("of PyTorch's distributed layer or its launcher")
        .contains("run.log:2");
  }

  /** ROCm/rccl#429's COLL lines, ranks 1 and 3 printing as rank 0 did (see NcclLogParserTest): MISMATCH. */
  @Test
  void collLinesThatDisagreeAtOneOpCountAreAProgramMismatch(@TempDir Path dir) throws Exception {
    String r0 = "h03r3n06:45006:45006 [0] NCCL INFO AllReduce: opCount 28c sendbuff 0x7f5dd32b2100 recvbuff "
        + "0x7f5dd32b2100 count 9984512 datatype 7 op 0 root 0 comm 0x55bef0201370 [nranks=4] stream 0x55bef0208bd0";
    String r2 = "h03r3n06:45012:45012 [2] NCCL INFO AllGather: opCount 28c sendbuff 0x7f1fd894af00 recvbuff "
        + "0x7f1ed1c00100 count 59205120 datatype 0 op 0 root 0 comm 0x559c24b55610 [nranks=4] stream 0x559c248a3630";
    Path log = Files.writeString(dir.resolve("coll.log"), String.join("\n", r0,
        r0.replace("45006:45006 [0]", "45009:45009 [1]"), r2, r0.replace("45006:45006 [0]", "45015:45015 [3]")));
    Result r = analyze(log);
    assertThat(r.report().get("verdict").asText()).isEqualTo("HANG");
    assertThat(r.report().get("symptom").asText()).isEqualTo("MISMATCH");
    assertThat(r.report().get("headline").asText()).contains("AllGather count 59205120");
  }
}
