package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.StringReader;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class WatchdogLogReaderTest {

  private static Path sample(String name) throws URISyntaxException {
    return Path.of(WatchdogLogReaderTest.class.getResource("/watchdog_logs/" + name).toURI());
  }

  @Test
  void readsTimeoutsAndGroupStatusFromARealLogWithViewerLineNumbers() throws Exception {
    List<WatchdogLine> lines = WatchdogLogReader.read(sample("llamafactory7396-watchdog-allreduce.log"));
    WatchdogLine timeout = lines.stream().filter(l -> l.kind() == WatchdogLine.Kind.TIMEOUT).findFirst()
        .orElseThrow();
    assertThat(timeout.globalRank()).isZero();
    assertThat(timeout.groupRank()).isZero();
    assertThat(timeout.seq()).isEqualTo(1580);
    assertThat(timeout.opType()).isEqualTo("ALLREDUCE");
    assertThat(timeout.numelIn()).isEqualTo(466119168);
    assertThat(timeout.timeoutMs()).isEqualTo(600000);
    assertThat(timeout.source()).isEqualTo("llamafactory7396-watchdog-allreduce.log:3");

    List<WatchdogLine> status = lines.stream().filter(l -> l.kind() == WatchdogLine.Kind.PG_STATUS).toList();
    assertThat(status).isNotEmpty().allSatisfy(s -> {
      assertThat(s.seq()).isEqualTo(1580);
      assertThat(s.lastEnqueued()).isGreaterThanOrEqualTo(1580);
      assertThat(s.lastCompleted()).isEqualTo(1579);
      assertThat(s.pgName()).isEqualTo("1");
    });
    assertThat(status).extracting(WatchdogLine::rank).contains(0, 3);
  }

  @Test
  void readsTheNewerStatusFormWithPgGuidAndDescription() throws Exception {
    List<WatchdogLine> lines = WatchdogLogReader.read(sample("clmvsnet14-syncbn-enqueued-ahead.log"));
    WatchdogLine status = lines.stream().filter(l -> l.kind() == WatchdogLine.Kind.PG_STATUS).findFirst()
        .orElseThrow();
    assertThat(status.rank()).isZero();
    assertThat(status.pgName()).isEqualTo("0");
    assertThat(status.pgDesc()).isEqualTo("default_pg");
    assertThat(status.seq()).isEqualTo(716);
    assertThat(status.lastEnqueued()).isEqualTo(747);
    assertThat(status.lastCompleted()).isEqualTo(715);
    WatchdogLine dump = lines.stream().filter(l -> l.kind() == WatchdogLine.Kind.DUMP_SIGNAL).findFirst()
        .orElseThrow();
    assertThat(dump.fromRank()).isEqualTo(-1);
    assertThat(dump.lastEnqueued()).isEqualTo(747);
  }

  @Test
  void readsOlderPrefixFormsDumpSignalsFromOtherRanksAndStuckWatchdogs() throws Exception {
    String log = String.join("\n",
        "[E ProcessGroupNCCL.cpp:458] [Rank 2] Watchdog caught collective operation timeout: "
            + "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800441 milliseconds before timing out.",
        "[rank5]:[E ProcessGroupNCCL.cpp:577] [PG 3 (TENSOR_MODEL_PARALLEL_GROUP) Rank 1] Timeout at NCCL work: 42, "
            + "last enqueued NCCL work: 41, last completed NCCL work: 40.",
        "[rank7]:[E1213 17:24:49.328237228 ProcessGroupNCCL.cpp:1858] [PG ID 0 PG GUID 0(default_pg) Rank 7] "
            + "Received a dump signal due to a collective timeout from  rank 3 and we will try our best to dump "
            + "the debug info. Last enqueued NCCL work: 12, last completed NCCL work: 11.",
        "[rank1]:[E ProcessGroupNCCL.cpp:1400] [PG ID 0 PG GUID 0(default_pg) Rank 1] ProcessGroupNCCL's watchdog "
            + "got stuck for 480 seconds without making progress in monitoring enqueued collectives.",
        "epoch 3 loss 0.25 — nothing to see here");
    List<WatchdogLine> lines = WatchdogLogReader.read(new StringReader(log), "train.log");
    assertThat(lines).extracting(WatchdogLine::kind).containsExactly(WatchdogLine.Kind.TIMEOUT,
        WatchdogLine.Kind.PG_STATUS, WatchdogLine.Kind.DUMP_SIGNAL, WatchdogLine.Kind.WATCHDOG_STUCK);
    assertThat(lines.get(0).rank()).isEqualTo(2);
    assertThat(lines.get(0).numelIn()).isEqualTo(-1);
    assertThat(lines.get(1).globalRank()).isEqualTo(5);
    assertThat(lines.get(1).groupRank()).isEqualTo(1);
    assertThat(lines.get(1).pgDesc()).isEqualTo("TENSOR_MODEL_PARALLEL_GROUP");
    assertThat(lines.get(1).lastEnqueued()).isEqualTo(41);
    assertThat(lines.get(2).fromRank()).isEqualTo(3);
    assertThat(lines.get(3).stuckSeconds()).isEqualTo(480);
    assertThat(lines.get(3).source()).isEqualTo("train.log:4");
  }

  @Test
  void theHeartbeatMonitorTimingOutMeansTheWatchdogIsStuck() {
    WatchdogLine l = WatchdogLogReader.parse("[rank6]:[E1019 01:04:03.356947152 ProcessGroupNCCL.cpp:1413] "
        + "[PG 3 Rank 0] Heartbeat monitor timed out! Process will be terminated after dumping debug info. "
        + "workMetaList_.size()=121", "train.log:9");
    assertThat(l.kind()).isEqualTo(WatchdogLine.Kind.WATCHDOG_STUCK);
    assertThat(l.globalRank()).isEqualTo(6);
    assertThat(l.pgName()).isEqualTo("3");
    assertThat(l.stuckSeconds()).isEqualTo(-1);
  }

  @Test
  void aCudaErrorIsAFactAboutTheRankThatPrintedIt() {
    WatchdogLine l = WatchdogLogReader.parse("[rank29]:[E1002 12:20:55.123831168 ProcessGroupNCCL.cpp:1923] "
        + "[PG ID 5 PG GUID 83(TENSOR_MODEL_PARALLEL_GROUP) Rank 1] Process group watchdog thread terminated with "
        + "exception: CUDA error: unspecified launch failure", "train.log:3");
    assertThat(l.kind()).isEqualTo(WatchdogLine.Kind.CUDA_ERROR);
    assertThat(l.rank()).isEqualTo(29);
    assertThat(WatchdogLogReader.parse("[rank11]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        + "4.35 GiB.", "train.log:4").rank()).isEqualTo(11);
    // Whose device failed is the whole fact: a line that does not say is none.
    assertThat(WatchdogLogReader.parse("RuntimeError: CUDA error: an illegal memory access was encountered", "x:1"))
        .isNull();
  }

  @Test
  void coalescedWorksUnsignedMinusOneIsNoCountNotACrash() {
    WatchdogLine l = WatchdogLogReader.parse("[rank3]:[E ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught "
        + "collective operation timeout: WorkNCCL(SeqNum=52, OpType=COALESCED, NumelIn=18446744073709551615, "
        + "NumelOut=18446744073709551615, Timeout(ms)=600000) ran for 600089 milliseconds before timing out.", "x:1");
    assertThat(l.kind()).isEqualTo(WatchdogLine.Kind.TIMEOUT);
    assertThat(l.seq()).isEqualTo(52);
    assertThat(l.numelIn()).isEqualTo(-1);
    assertThat(l.numelOut()).isEqualTo(-1);
    assertThat(l.timeoutMs()).isEqualTo(600000);
  }

  @Test
  void aTimeoutNoticedHoursLateSaysHowLongTheWatchdogDidNotRun() {
    WatchdogLine late = WatchdogLogReader.parse("[E ProcessGroupNCCL.cpp:475] [Rank 7] Watchdog caught collective "
        + "operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25200000 "
        + "milliseconds before timing out.", "x:1");
    assertThat(late.stuckSeconds()).isEqualTo((25_200_000 - 1_800_000) / 1000);
    WatchdogLine onTime = WatchdogLogReader.parse("[E ProcessGroupNCCL.cpp:475] [Rank 7] Watchdog caught "
        + "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1806281 "
        + "milliseconds before timing out.", "x:1");
    assertThat(onTime.stuckSeconds()).isEqualTo(-1);
  }

  @Test
  void theCollectiveCheckersMismatchLineSaysWhatEachNamedRankIsRunning() throws Exception {
    String line = "[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
        + "collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[195812480], "
        + "TensorDtypes=BFloat16), but Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=3104, "
        + "OpType=ALLREDUCE, TensorShape=[2, 3], TensorDtypes=BFloat16).";
    List<WatchdogLine> lines = WatchdogLogReader.read(new StringReader(line), "train.log");
    assertThat(lines).extracting(WatchdogLine::kind).containsOnly(WatchdogLine.Kind.RUNNING);
    assertThat(lines).extracting(WatchdogLine::rank).containsExactly(1, 0);
    assertThat(lines).extracting(WatchdogLine::seq).containsExactly(3104L, 3104L);
    assertThat(lines).extracting(WatchdogLine::numelIn).containsExactly(195812480L, 6L);
  }

  @Test
  void aLineHardWrappedInsideAWordIsReadWithItsContinuation() throws Exception {
    String log = "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 6]"
        + " ProcessGroupNCCL'\ns watchdog got stuck for 480 seconds without making progress in monitoring enqueued"
        + " collectives.\nepoch 3 loss 0.25\n";
    List<WatchdogLine> lines = WatchdogLogReader.read(new StringReader(log), "train.log");
    assertThat(lines).singleElement().satisfies(l -> {
      assertThat(l.kind()).isEqualTo(WatchdogLine.Kind.WATCHDOG_STUCK);
      assertThat(l.rank()).isEqualTo(6);
      assertThat(l.stuckSeconds()).isEqualTo(480);
      assertThat(l.source()).isEqualTo("train.log:1");
    });
  }

  @Test
  void aGroupIsNamedByItsGuidSinceThePgIdIsAPerProcessCounter() {
    // NVIDIA/nccl#1610: ranks 13 and 15 both print PG ID 11, for two different groups.
    WatchdogLine a = WatchdogLogReader.parse(" 2025-02-18 12:54 [rank13]:[E218 04:54:22.864535778 "
        + "ProcessGroupNCCL.cpp:1795] [PG ID 11 PG GUID 119 Rank 1] Exception (either an error or timeout) detected "
        + "by watchdog at work: 216, last enqueued NCCL work: 220, last completed NCCL work: 215.", "a.log:2");
    WatchdogLine b = WatchdogLogReader.parse("[rank15]:[E218 04:54:22.883358915 ProcessGroupNCCL.cpp:1795] "
        + "[PG ID 11 PG GUID 112 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 57, "
        + "last enqueued NCCL work: 57, last completed NCCL work: 56.", "a.log:4");
    assertThat(a.pgName()).isEqualTo("119");
    assertThat(b.pgName()).isEqualTo("112");
    WatchdogLine described = WatchdogLogReader.parse("[rank1]:[E1122 06:40:01.903028278 ProcessGroupNCCL.cpp:1785] "
        + "[PG ID 0 PG GUID 0(default_pg) Rank 1] Timeout at NCCL work: 126, last enqueued NCCL work: 128, last "
        + "completed NCCL work: 125.", "b.log:1");
    assertThat(described.pgName()).isEqualTo("0");
    assertThat(described.pgDesc()).isEqualTo("default_pg");
  }

  @Test
  void theCollectiveCheckersOwnLineSaysWhatItsRankIsEntering() throws Exception {
    // deepspeedai/DeepSpeed#4890, TORCH_DISTRIBUTED_DEBUG=DETAIL.
    String log = "[I ProcessGroupWrapper.cpp:562] [Rank 2] Running collective: CollectiveFingerPrint("
        + "SequenceNumber=1276, OpType=ALLREDUCE, TensorShape=[], TensorDtypes=Float, TensorDeviceTypes="
        + "TensorOptions(dtype=float (default), device=cuda, layout=Strided (default)))\n"
        + "[I ProcessGroupWrapper.cpp:562] Running collective: CollectiveFingerPrint(SequenceNumber=1277, "
        + "OpType=ALLREDUCE)\n";
    List<WatchdogLine> lines = WatchdogLogReader.read(new StringReader(log), "ds.log");
    assertThat(lines).singleElement().satisfies(l -> {
      assertThat(l.kind()).isEqualTo(WatchdogLine.Kind.RUNNING);
      assertThat(l.rank()).isEqualTo(2);
      assertThat(l.seq()).isEqualTo(1276);
      assertThat(l.opType()).isEqualTo("ALLREDUCE");
      assertThat(l.numelIn()).isEqualTo(-1);
      assertThat(l.source()).isEqualTo("ds.log:1");
    });
  }

  @Test
  void opTypesReadAsTheNamesFlightRecorderRecordsGive() {
    assertThat(OpTypes.profilingName("_ALLGATHER_BASE")).isEqualTo("_all_gather_base");
    assertThat(OpTypes.profilingName("ALLREDUCE")).isEqualTo("all_reduce");
    assertThat(OpTypes.profilingName("ALLTOALL_BASE")).isEqualTo("all_to_all");
    assertThat(OpTypes.profilingName("SOMETHING_NEW")).isEqualTo("something_new");
  }

  /** PyTorch 1.8-1.9 printed no sequence number (open-mmlab/mmpretrain#1837, as posted). */
  @Test
  void readsTimeoutsOfPyTorchBeforeSequenceNumbers() throws Exception {
    List<WatchdogLine> lines = WatchdogLogReader.read(new StringReader("  what():  [Rank 3] Watchdog caught collective "
        + "operation timeout: WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1801530 milliseconds before "
        + "timing out."), "train.log");
    assertThat(lines).singleElement().satisfies(l -> {
      assertThat(l.kind()).isEqualTo(WatchdogLine.Kind.TIMEOUT);
      assertThat(l.rank()).isEqualTo(3);
      assertThat(l.seq()).isEqualTo(-1);
      assertThat(l.opType()).isEqualTo("ALLREDUCE");
      assertThat(l.timeoutMs()).isEqualTo(1800000);
    });
  }

  /** A line hard-wrapped inside its work (huggingface/open-r1#620, as posted) is read with its continuation. */
  @Test
  void aTimeoutWrappedInsideItsWorkIsReadWhole() throws Exception {
    List<WatchdogLine> lines = WatchdogLogReader.read(new StringReader(String.join("\n",
        "` ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
            + "OpType=BROADCAST, NumelIn=112, Numel",
        "Out=112, Timeout(ms)=1800000) ran for 1800010 milliseconds before timing out.")), "train.log");
    assertThat(lines).singleElement().satisfies(l -> {
      assertThat(l.seq()).isEqualTo(4);
      assertThat(l.numelIn()).isEqualTo(112);
      assertThat(l.numelOut()).isEqualTo(112);
    });
  }

  /** PyTorch 1.10's checker names only the printing rank (speechbrain/speechbrain#1166, as posted). */
  @Test
  void theCheckersInconsistentCollectiveLineIsAMismatchReport() throws Exception {
    List<WatchdogLine> lines = WatchdogLogReader.read(new StringReader("RuntimeError: Detected mismatch between "
        + "collectives on ranks. Rank 0 is running inconsistent collective: CollectiveFingerPrint(OpType=BROADCAST, "
        + "TensorShape=[4], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, "
        + "layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), "
        + "memory_format=(nullopt))"), "train.log");
    assertThat(lines).singleElement().satisfies(l -> {
      assertThat(l.kind()).isEqualTo(WatchdogLine.Kind.MISMATCH_REPORTED);
      assertThat(l.rank()).isZero();
      assertThat(l.opType()).isEqualTo("BROADCAST");
      assertThat(l.numelIn()).isEqualTo(4);
    });
  }

  /**
   * PyTorch 1.11-1.12 broke the message over lines and named the second rank's collective by its op alone
   * (pytorch/pytorch#79901, the message as its description quotes it).
   */
  @Test
  void aMismatchMessageBrokenOverLinesNamesEachRanksCollective() throws Exception {
    List<WatchdogLine> lines = WatchdogLogReader.read(new StringReader(String.join("\n",
        "Detected mismatch between collectives on ranks. Rank 0 is running collective:",
        "CollectiveFingerPrint(OpType=ALLREDUCE, …), but Rank 1 is running collective: REDUCE.")), "train.log");
    assertThat(lines).extracting(WatchdogLine::kind).containsOnly(WatchdogLine.Kind.RUNNING);
    assertThat(lines).extracting(WatchdogLine::rank).containsExactly(0, 1);
    assertThat(lines).extracting(WatchdogLine::opType).containsExactly("ALLREDUCE", "REDUCE");
    assertThat(lines).extracting(WatchdogLine::seq).containsOnly(0L);
  }

  /** PyTorch prints an empty GUID for some groups (NVIDIA/Fuser#3055, as posted). */
  @Test
  void readsTheRankOfAGroupWithAnEmptyGuid() throws Exception {
    List<WatchdogLine> lines = WatchdogLogReader.read(new StringReader("[E929 22:14:53.112803704 ProcessGroupNCCL.cpp:"
        + "1487] [PG ID 0 PG GUID  Rank 3] ProcessGroupNCCL's watchdog got stuck for 10 seconds without making "
        + "progress in monitoring enqueued collectives."), "train.log");
    assertThat(lines).singleElement().satisfies(l -> {
      assertThat(l.kind()).isEqualTo(WatchdogLine.Kind.WATCHDOG_STUCK);
      assertThat(l.rank()).isEqualTo(3);
      assertThat(l.stuckSeconds()).isEqualTo(10);
    });
  }
}
