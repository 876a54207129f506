package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.testing.dumps.DumpWriter;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The two 16-rank Megatron dump folders PyTorch wrote (from NVIDIA/nvidia-resiliency-ext, see
 * {@code fr_dumps/NOTICE.md}): format 2.9, NCCL 2.27.3, only in-flight entries, no frames, no timing.
 */
class RealDumpsTest {
  private static final int[] GPU_ERROR_ENTRIES = {20, 20, 20, 20, 8, 8, 8, 8, 19, 19, 19, 19, 27, 16, 43, 15};
  private static final int[] LOCK_GIL_ENTRIES = {11, 11, 11, 11, 11, 11, 11, 11, 9, 0, 9, 9, 9, 9, 0, 9};

  private final DumpReader reader = DumpReader.create();

  static Path sample(String folder) {
    try {
      return Path.of(RealDumpsTest.class.getResource("/fr_dumps/" + folder).toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void everyFileOfBothFoldersParsesWithoutWarnings() throws Exception {
    for (String folder : List.of("nvrx_gpu_error_1st", "nvrx_lock_gil_1st")) {
      DumpFolder read = reader.readFolder(sample(folder), Optional.empty());
      assertThat(read.prefix()).isEqualTo("_dump_");
      assertThat(read.failures()).isEmpty();
      assertThat(read.dumps()).extracting(FlightRecorderDump::rank).containsExactly(
          IntStream.range(0, 16).boxed().toArray(Integer[]::new));
      assertThat(read.notes()).containsExactly("ignored fault_injection.log: not named <prefix><rank>");
      for (FlightRecorderDump d : read.dumps()) {
        assertThat(d.version()).isEqualTo("2.9");
        assertThat(d.commLibVersion()).isEqualTo("2.27.3");
        assertThat(d.warnings()).as("warnings of rank %d", d.rank()).isEmpty();
        assertThat(d.frames()).isEmpty();
        assertThat(d.records()).allSatisfy(r -> {
          assertThat(r.getState()).isEqualTo(CollectiveState.SCHEDULED);
          assertThat(r.getRetired()).isFalse();
          assertThat(r.getTimeStartedNs()).isZero();
          assertThat(r.getTimeCompletedNs()).isZero();
          assertThat(r.getBackend()).isEqualTo("nccl");
        });
        // Every group the rank lists has this rank as a member, and all pg_status ids are matched to a group.
        assertThat(d.processGroups()).allSatisfy(g -> assertThat(g.getRanksList()).contains(d.rank()));
        assertThat(d.processGroups()).allSatisfy(g -> assertThat(g.getLocalId()).isNotEmpty());
        assertThat(d.progress()).hasSameSizeAs(d.processGroups());
      }
    }
  }

  @Test
  void entryCountsPerRankAreThoseInTheFiles() throws Exception {
    assertThat(entryCounts("nvrx_gpu_error_1st")).containsExactly(GPU_ERROR_ENTRIES);
    assertThat(entryCounts("nvrx_lock_gil_1st")).containsExactly(LOCK_GIL_ENTRIES);
  }

  @Test
  void wedgedRanksNineAndFourteenDumpedNoEntries() throws Exception {
    DumpFolder read = reader.readFolder(sample("nvrx_lock_gil_1st"), Optional.empty());
    for (FlightRecorderDump d : read.dumps()) {
      if (d.rank() == 9 || d.rank() == 14) {
        assertThat(d.records()).isEmpty();
        // An empty dump still knows its groups and how far each got, by pg_config order alone.
        assertThat(d.processGroups()).hasSize(13);
        assertThat(d.progress()).hasSize(13);
      } else {
        assertThat(d.records()).isNotEmpty();
      }
    }
  }

  @Test
  void gpuErrorRanksTwelveAndFourteenHoldTheMostInFlightEntries() throws Exception {
    int[] counts = entryCounts("nvrx_gpu_error_1st");
    assertThat(counts[12]).isEqualTo(27);
    assertThat(counts[14]).isEqualTo(43);
    for (int r = 0; r < 16; r++) {
      if (r != 12 && r != 14) {
        assertThat(counts[r]).isBetween(8, 20);
      }
    }
  }

  @Test
  void processGroupsComeFromPgConfigWithTheirMembers() throws Exception {
    FlightRecorderDump d = reader.read(sample("nvrx_gpu_error_1st").resolve("_dump_12"));
    assertThat(d.processGroups()).extracting(ProcessGroup::getName).containsExactly(
        "0", "108", "112", "33", "41", "43", "44", "58", "69", "7", "74", "94", "95");
    ProcessGroup pp = d.processGroup("43");
    assertThat(pp.getDesc()).isEqualTo("PIPELINE_MODEL_PARALLEL_GROUP");
    assertThat(pp.getRanksList()).containsExactly(0, 4, 8, 12);
    assertThat(pp.getGlobalRankStart()).isZero();
    assertThat(pp.getGlobalRankStride()).isEqualTo(4);
    assertThat(pp.getLocalId()).isEqualTo("6");
    assertThat(d.processGroup("0").getRanksList()).hasSize(16);
    assertThat(d.processGroup("0").getDesc()).isEqualTo("default_pg");
    assertThat(d.processGroup("108").getRanksList()).containsExactly(12);
    assertThat(d.processGroup("33").getRanksList()).containsExactly(0, 1, 4, 5, 8, 9, 12, 13);
    CommsId.GroupLayout irregular = CommsId.layoutOf(new int[] {0, 1, 4, 5, 8, 9, 12, 13});
    assertThat(d.processGroup("33").getGlobalRankStride()).isZero();
    assertThat(d.processGroup("33").getGlobalRankStart()).isEqualTo(irregular.start());
  }

  @Test
  void entriesMapToCollectiveRecords() throws Exception {
    FlightRecorderDump d = reader.read(sample("nvrx_gpu_error_1st").resolve("_dump_12"));
    CollectiveRecord first = d.records().get(0);
    assertThat(first.getRecordId()).isEqualTo(90083);
    assertThat(first.getProcessGroup()).isEqualTo("41");
    assertThat(first.getOp()).isEqualTo("_all_gather_base");
    assertThat(first.getBackend()).isEqualTo("nccl");
    assertThat(first.getIsP2P()).isFalse();
    assertThat(first.getPeer()).isEqualTo(-1);
    assertThat(first.getCollectiveSeq()).isEqualTo(42806);
    assertThat(first.getP2PSeq()).isZero();
    assertThat(first.getOpId()).isEqualTo(42806);
    assertThat(first.getTimeCreatedNs()).isEqualTo(1758610505880883597L);
    assertThat(first.getTimeoutMs()).isEqualTo(180000);
    assertThat(first.getThreadName()).isEqualTo("pt_autograd_4");
    assertThat(first.getThreadId()).isEqualTo("23437656749760");
    assertThat(first.getInputSizes(0).getDimsList()).containsExactly(4096L, 1L, 5120L);
    assertThat(first.getOutputSizes(0).getDimsList()).containsExactly(8192L, 1L, 5120L);
    assertThat(first.getInputDtypesList()).containsExactly("BFloat16");
    assertThat(first.getCommsId()).isEqualTo(CommsId.of("41", 42806, false, CommsId.layoutOf(new int[] {12, 13})));
    assertThat(d.records()).extracting(CollectiveRecord::getRecordId).isSorted();
  }

  @Test
  void p2pPeersAreGlobalRanksOfTheGroupRanksInTheProfilingName() throws Exception {
    FlightRecorderDump d = reader.read(sample("nvrx_gpu_error_1st").resolve("_dump_12"));
    // Rank 12 is group rank 3 of PIPELINE group '43' = [0, 4, 8, 12]: "send 3->0" goes to 0, "recv 3<-2" from 8.
    List<CollectiveRecord> p2p = d.records().stream().filter(CollectiveRecord::getIsP2P).toList();
    assertThat(p2p).extracting(CollectiveRecord::getOp, CollectiveRecord::getPeer, CollectiveRecord::getP2PSeq)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("recv", 0, 11977L),
            org.assertj.core.groups.Tuple.tuple("send", 8, 11978L),
            org.assertj.core.groups.Tuple.tuple("recv", 8, 11979L),
            org.assertj.core.groups.Tuple.tuple("send", 0, 11980L));
    // PyTorch leaves the group's collective count on P2P entries; the P2P's own sequence is p2p_seq.
    assertThat(p2p).allSatisfy(r -> assertThat(r.getCollectiveSeq()).isEqualTo(26));
    assertThat(p2p.get(0).getCommsId()).isEqualTo(CommsId.of("43", 11977, true,
        CommsId.layoutOf(new int[] {0, 4, 8, 12})));

    FlightRecorderDump rank0 = reader.read(sample("nvrx_lock_gil_1st").resolve("_dump_0"));
    CollectiveRecord recv = rank0.records().stream()
        .filter(r -> r.getIsP2P() && r.getProcessGroup().equals("0")).findFirst().orElseThrow();
    assertThat(recv.getOp()).isEqualTo("recv");
    assertThat(recv.getPeer()).isEqualTo(8);
  }

  @Test
  void pgStatusIsKeyedByPgIdAndJoinedToGroupNames() throws Exception {
    FlightRecorderDump d = reader.read(sample("nvrx_gpu_error_1st").resolve("_dump_12"));
    assertThat(d.progress()).extracting(ProcessGroupProgress::getProcessGroup).containsExactly(
        "0", "7", "33", "41", "43", "44", "58", "69", "74", "94", "95", "108", "112");
    ProcessGroupProgress tp = d.progress().get(3);
    assertThat(tp.getLastEnqueuedSeq()).isEqualTo(42817);
    assertThat(tp.getLastCompletedSeq()).isEqualTo(42805);
    assertThat(tp.getLastStartedSeq()).isEqualTo(-1);
    assertThat(tp.getLastEnqueuedP2PSeq()).isEqualTo(-1);
    assertThat(tp.getLastCompletedP2PSeq()).isEqualTo(-1);
    assertThat(tp.getLastProgressNs()).isZero();
    assertThat(d.processGroup("41").getLocalId()).isEqualTo("5");
  }

  @Test
  void rewritingARealDumpGivesTheSameBytes() throws Exception {
    for (String folder : List.of("nvrx_gpu_error_1st", "nvrx_lock_gil_1st")) {
      for (int r = 0; r < 16; r++) {
        Path file = sample(folder).resolve("_dump_" + r);
        assertThat(DumpWriter.toPickle(reader.read(file))).as(file.toString()).isEqualTo(Files.readAllBytes(file));
      }
    }
  }

  private int[] entryCounts(String folder) throws DumpFormatException {
    return reader.readFolder(sample(folder), Optional.empty()).dumps().stream()
        .mapToInt(d -> d.records().size()).toArray();
  }
}
