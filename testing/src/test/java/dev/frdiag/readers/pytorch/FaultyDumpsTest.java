package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.testing.dumps.DumpWriter;
import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import dev.frdiag.testing.sim.Topology;
import dev.frdiag.testing.sim.Workload;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FaultyDumpsTest {
  /** tensor-parallel 4, 2 stages, data-parallel 4: every kind of group, quick to simulate. */
  private static final int RANKS = 32;
  private static final int ENTRIES = 60;

  @TempDir
  Path dir;

  private final DumpReader reader = DumpReader.create();

  private static FaultyDumps.Builder job(Kind kind, int rank) {
    return FaultyDumps.builder().ranks(RANKS).entriesPerRank(ENTRIES).fault(kind, rank);
  }

  @Test
  void everyRankLeavesAFullRingOfItsLastEntries() {
    FaultyDumps job = job(Kind.CPU_STALL, 9).build();
    for (int rank : job.ranksWithDumps()) {
      FlightRecorderDump d = job.dump(rank).orElseThrow();
      assertThat(d.records()).hasSize(ENTRIES);
      // The ring wrapped, as a real job's has long before it hangs.
      assertThat(d.records().get(0).getRecordId()).isPositive();
      assertThat(d.version()).isEqualTo("2.9");
      assertThat(d.commLibVersion()).isEqualTo("2.27.3");
    }
  }

  @Test
  void picklesAndJsonReadBackExactlyAsGenerated() throws Exception {
    FaultyDumps withStacks = job(Kind.GPU_STALL, 9).timing(true).stackDepth(40).build();
    FaultyDumps plain = job(Kind.GPU_STALL, 9).timing(true).build();
    for (int rank : List.of(0, 9, 17, 31)) {
      FlightRecorderDump d = withStacks.dump(rank).orElseThrow();
      assertThat(reader.parse(DumpWriter.toPickle(d), d.file(), rank)).isEqualTo(d);
      // JSON has no frames: the same data without them.
      FlightRecorderDump p = plain.dump(rank).orElseThrow();
      assertThat(reader.parse(DumpWriter.toJson(p), p.file(), rank)).isEqualTo(p);
    }
  }

  @Test
  void groupsAreNamedAndNumberedAsNewGroupDoes() {
    FaultyDumps job = job(Kind.CPU_STALL, 9).build();
    FlightRecorderDump d = job.dump(17).orElseThrow();
    // The default group "0" and the job-wide creation count as names; pg_id counts the rank's own groups.
    assertThat(d.processGroups()).extracting(ProcessGroup::getName).allMatch(n -> n.matches("\\d+")).contains("0");
    assertThat(d.processGroups()).extracting(ProcessGroup::getLocalId)
        .containsExactlyInAnyOrder("0", "1", "2", "3");
    ProcessGroup world = d.processGroup("0");
    assertThat(world.getDesc()).isEqualTo("default_pg");
    assertThat(world.getRanksCount()).isEqualTo(RANKS);
    for (ProcessGroup g : d.processGroups()) {
      assertThat(g.getRanksList()).contains(17);
    }
    // Creation order is name order, as pg_id order: what lets a reader match pg_status without entries.
    List<ProcessGroup> byPgId = d.processGroups().stream()
        .sorted((a, b) -> Integer.compare(Integer.parseInt(a.getLocalId()), Integer.parseInt(b.getLocalId())))
        .toList();
    assertThat(byPgId).extracting(g -> Integer.parseInt(g.getName())).isSorted();
  }

  @Test
  void seqsCountCollectivesPerGroupAndEachRanksOwnP2pOps() {
    FaultyDumps job = job(Kind.CPU_STALL, 9).build();
    for (int rank : List.of(2, 17)) {
      Map<String, Long> lastCollective = new HashMap<>();
      Map<String, Long> lastP2p = new HashMap<>();
      Map<String, Long> lastOpId = new HashMap<>();
      for (CollectiveRecord r : job.dump(rank).orElseThrow().records()) {
        String g = r.getProcessGroup();
        if (lastOpId.containsKey(g)) {
          // op_id counts every op of the group (the coalesced end marker repeats the last one).
          assertThat(r.getOpId()).isBetween(lastOpId.get(g), lastOpId.get(g) + 1);
        }
        lastOpId.put(g, r.getOpId());
        if (r.getIsP2P()) {
          assertThat(r.getCollectiveSeq()).isZero();
          if (lastP2p.containsKey(g)) {
            assertThat(r.getP2PSeq()).isEqualTo(lastP2p.get(g) + 1);
          }
          lastP2p.put(g, r.getP2PSeq());
        } else {
          assertThat(r.getP2PSeq()).isZero();
          if (lastCollective.containsKey(g)) {
            // A coalesced group shares one seq; otherwise every collective takes the next.
            assertThat(r.getCollectiveSeq()).isBetween(lastCollective.get(g), lastCollective.get(g) + 1);
          }
          lastCollective.put(g, r.getCollectiveSeq());
        }
      }
      assertThat(lastP2p).isNotEmpty();
      assertThat(lastCollective).isNotEmpty();
    }
  }

  @Test
  void coalescedGradientsShareOneSeqAndEndWithTheMarker() {
    FlightRecorderDump d = job(Kind.CPU_STALL, 9).build().dump(4).orElseThrow();
    List<CollectiveRecord> records = d.records();
    int marker = -1;
    for (int i = 2; i < records.size(); i++) {
      if (records.get(i).getOp().equals("coalesced")) {
        marker = i;
        break;
      }
    }
    assertThat(marker).isPositive();
    CollectiveRecord end = records.get(marker);
    assertThat(records.subList(marker - 2, marker)).allSatisfy(r -> {
      assertThat(r.getOp()).isEqualTo("all_reduce");
      assertThat(r.getCollectiveSeq()).isEqualTo(end.getCollectiveSeq());
      assertThat(r.getProcessGroup()).isEqualTo(end.getProcessGroup());
    });
  }

  @Test
  void pgStatusOfAGroupUsedOnlyForSendsAndRecvsCountsP2pSeqs() {
    FlightRecorderDump d = job(Kind.CPU_STALL, 9).build().dump(3).orElseThrow();
    ProcessGroup pipeline = d.processGroups().stream()
        .filter(g -> g.getDesc().equals("PIPELINE_MODEL_PARALLEL_GROUP")).findFirst().orElseThrow();
    long lastSend = d.records().stream().filter(r -> r.getProcessGroup().equals(pipeline.getName()))
        .mapToLong(CollectiveRecord::getP2PSeq).max().orElseThrow();
    ProcessGroupProgress status = progressOf(d, pipeline.getName());
    assertThat(status.getLastEnqueuedSeq()).isEqualTo(lastSend);
    assertThat(status.getLastEnqueuedP2PSeq()).isEqualTo(-1);
  }

  @Test
  void withoutTimingNothingIsStartedAndPgStatusHasNoStarts() {
    FaultyDumps job = job(Kind.GPU_STALL, 9).build();
    for (int rank = 0; rank < RANKS; rank++) {
      FlightRecorderDump d = job.dump(rank).orElseThrow();
      assertThat(d.records()).allSatisfy(r -> {
        assertThat(r.getState()).isNotEqualTo(CollectiveState.STARTED);
        assertThat(r.getTimeStartedNs()).isZero();
        assertThat(r.getDurationMs()).isZero();
        assertThat(r.getRetired()).isEqualTo(r.getState() == CollectiveState.COMPLETED);
      });
      assertThat(d.progress()).allSatisfy(p -> assertThat(p.getLastStartedSeq()).isEqualTo(-1));
    }
  }

  @Test
  void gpuStallWithTimingLeavesTheRankScheduledWhileItsPeersStarted() {
    FaultyDumps job = job(Kind.GPU_STALL, 9).timing(true).build();
    CollectiveRecord stuck = oldestOutstanding(job.dump(9).orElseThrow());
    assertThat(stuck.getState()).isEqualTo(CollectiveState.SCHEDULED);
    for (int peer : List.of(8, 10, 11)) {
      CollectiveRecord same = sameOp(job.dump(peer).orElseThrow(), stuck);
      assertThat(same.getState()).isEqualTo(CollectiveState.STARTED);
      assertThat(same.getTimeStartedNs()).isPositive();
    }
    assertThat(job.dump(8).orElseThrow().records()).anySatisfy(r -> assertThat(r.getDurationMs()).isPositive());
    assertThat(job.dump(9).orElseThrow().progress()).anySatisfy(p -> assertThat(p.getLastStartedSeq()).isPositive());
  }

  @Test
  void gpuStallWithoutTimingShowsPeersThatCompletedWhatTheRankNeverDid() {
    FaultyDumps job = job(Kind.GPU_STALL, 9).build();
    FlightRecorderDump culprit = job.dump(9).orElseThrow();
    CollectiveRecord stuck = oldestOutstanding(culprit);
    assertThat(stuck.getOp()).isEqualTo("_all_gather_base");
    for (int peer : List.of(8, 10, 11)) {
      FlightRecorderDump d = job.dump(peer).orElseThrow();
      assertThat(sameOp(d, stuck).getState()).isEqualTo(CollectiveState.COMPLETED);
      assertThat(progressOf(d, stuck.getProcessGroup()).getLastCompletedSeq()).isEqualTo(stuck.getCollectiveSeq());
    }
    assertThat(progressOf(culprit, stuck.getProcessGroup()).getLastCompletedSeq())
        .isEqualTo(stuck.getCollectiveSeq() - 1);
  }

  @Test
  void cpuStallLeavesTheRankBehindItsPeers() {
    FaultyDumps job = job(Kind.CPU_STALL, 9).build();
    FlightRecorderDump culprit = job.dump(9).orElseThrow();
    FlightRecorderDump peer = job.dump(8).orElseThrow();
    String tp = culprit.processGroups().stream().filter(g -> g.getDesc().equals("TENSOR_MODEL_PARALLEL_GROUP"))
        .findFirst().orElseThrow().getName();
    assertThat(progressOf(culprit, tp).getLastEnqueuedSeq()).isLessThan(progressOf(peer, tp).getLastEnqueuedSeq());
    assertThat(culprit.records()).allSatisfy(r -> assertThat(r.getState()).isEqualTo(CollectiveState.COMPLETED));
  }

  @Test
  void fabricFaultLeavesEveryRankStartedInTheWorldAllReduce() {
    FaultyDumps job = job(Kind.FABRIC, 0).timing(true).build();
    assertThat(job.faultyRank()).isEqualTo(-1);
    assertThat(job.culprits()).isEmpty();
    assertThat(job.symptom()).isEqualTo(Symptom.FABRIC);
    for (int rank : List.of(0, 13, 31)) {
      CollectiveRecord last = job.dump(rank).orElseThrow().records().stream()
          .filter(r -> r.getState() != CollectiveState.COMPLETED).findFirst().orElseThrow();
      assertThat(last.getProcessGroup()).isEqualTo("0");
      assertThat(last.getState()).isEqualTo(CollectiveState.STARTED);
    }
  }

  @Test
  void mismatchesChangeOnlyTheFaultyRanksDataParallelAllReduce() {
    FaultyDumps size = job(Kind.SIZE_MISMATCH, 9).build();
    FaultyDumps dtype = job(Kind.DTYPE_MISMATCH, 9).build();
    CollectiveRecord peer = lastDataParallelAllReduce(size.dump(13).orElseThrow());
    CollectiveRecord halved = lastDataParallelAllReduce(size.dump(9).orElseThrow());
    CollectiveRecord retyped = lastDataParallelAllReduce(dtype.dump(9).orElseThrow());
    assertThat(halved.getInputSizes(0).getDims(0)).isEqualTo(peer.getInputSizes(0).getDims(0) / 2);
    assertThat(halved.getInputDtypesList()).isEqualTo(peer.getInputDtypesList());
    assertThat(retyped.getInputSizesList()).isEqualTo(peer.getInputSizesList());
    assertThat(retyped.getOutputSizesList()).isEqualTo(peer.getOutputSizesList());
    assertThat(peer.getInputDtypesList()).containsExactly("Float");
    assertThat(retyped.getInputDtypesList()).containsExactly("BFloat16");
    assertThat(retyped.getOutputDtypesList()).containsExactly("BFloat16");
  }

  @Test
  void emptyEntriesRankDumpsItsStatusAndNothingElse() throws Exception {
    FaultyDumps job = job(Kind.EMPTY_ENTRIES, 9).build();
    FlightRecorderDump d = job.dump(9).orElseThrow();
    assertThat(d.records()).isEmpty();
    assertThat(d.progress()).hasSize(d.processGroups().size());
    // Both encodings: JSON leaves "entries" out, as nlohmann's dump does, and the reader still maps pg_status.
    for (Encoding e : Encoding.values()) {
      FlightRecorderDump back = reader.parse(DumpWriter.encode(d, e), d.file(), 9);
      assertThat(back).isEqualTo(d);
    }
  }

  @Test
  void onlyActiveDumpsHoldNothingCompleted() {
    FaultyDumps job = job(Kind.CPU_STALL, 9).onlyActive(true).build();
    assertThat(job.dump(9).orElseThrow().records()).isEmpty();
    for (int rank : List.of(0, 8, 31)) {
      assertThat(job.dump(rank).orElseThrow().records()).isNotEmpty()
          .allSatisfy(r -> assertThat(r.getState()).isEqualTo(CollectiveState.SCHEDULED));
    }
  }

  @Test
  void stacksHaveTheAskedDepthAndShareFrames() throws Exception {
    FlightRecorderDump d = job(Kind.CPU_STALL, 9).stackDepth(40).build().dump(2).orElseThrow();
    assertThat(d.records()).allSatisfy(r -> assertThat(r.getFrameIdsCount()).isEqualTo(40));
    assertThat(d.frames().size()).isLessThan(80);
    CollectiveRecord op = d.records().stream().filter(r -> !r.getOp().equals("coalesced")).findFirst().orElseThrow();
    assertThat(d.frames().get(op.getFrameIds(0)).getFilename()).startsWith("torch/distributed/");
    assertThat(d.frames().get(op.getFrameIds(39)).getFilename()).isNotEmpty();
  }

  @Test
  void missingFileRankWritesNothingAndTheOthersAreShuffled() throws Exception {
    FaultyDumps one = job(Kind.MISSING_FILE, 9).seed(1).build();
    FaultyDumps two = job(Kind.MISSING_FILE, 9).seed(2).build();
    assertThat(one.dump(9)).isEmpty();
    List<Path> first = one.write(dir.resolve("one"), "_dump_", Encoding.PICKLE);
    List<Path> second = two.write(dir.resolve("two"), "_dump_", Encoding.JSON);
    assertThat(first).hasSize(RANKS - 1);
    assertThat(Files.exists(dir.resolve("one").resolve("_dump_9"))).isFalse();
    assertThat(second.get(0).getFileName().toString()).endsWith(".json");
    List<Integer> order = ranksOf(first);
    assertThat(order).isNotEqualTo(ranksOf(second)).isNotEqualTo(order.stream().sorted().toList());
    List<Long> mtimes = new ArrayList<>();
    for (Path p : first) {
      mtimes.add(Files.getLastModifiedTime(p).toMillis());
    }
    assertThat(mtimes).doesNotHaveDuplicates().isNotEqualTo(mtimes.stream().sorted().toList());
    DumpFolder folder = reader.readFolder(dir.resolve("one"), Optional.empty());
    assertThat(folder.dumps()).hasSize(RANKS - 1);
    FlightRecorderDump read = folder.dumps().stream().filter(d -> d.rank() == 10).findFirst().orElseThrow();
    assertThat(read.withFile(Path.of("_dump_10"))).isEqualTo(one.dump(10).orElseThrow());
  }

  @Test
  void fusedGradientsAreOneAllReduceCoalescedEntryListingEveryTensor() {
    FlightRecorderDump d = job(Kind.CPU_STALL, 9).workload(Workload.builder()
        .gradients(Workload.Gradients.ALLREDUCE_COALESCED).build()).build().dump(4).orElseThrow();
    List<CollectiveRecord> fused = d.records().stream().filter(r -> r.getOp().equals("allreduce_coalesced")).toList();
    assertThat(fused).isNotEmpty().allSatisfy(r -> {
      assertThat(r.getInputSizesList()).extracting(s -> s.getDims(0)).containsExactly(4L * 4096, 4096L);
      assertThat(r.getInputDtypesList()).containsExactly("Float", "Float");
    });
    assertThat(d.records()).noneMatch(r -> r.getOp().equals("coalesced"));
  }

  @Test
  void aHealthyJobLeavesFullRingsOfCompletedEntriesThatEveryRankNumbersAlike() {
    // Tensor- and data-parallel only: every rank records the same ops per step, so the rings hold the same record
    // ids, as PyTorch's own analyzer needs to line them up.
    Topology flat = Topology.builder().worldSize(16).tensorParallel(4).pipelineStages(1).build();
    FaultyDumps healthy = FaultyDumps.builder().topology(flat).entriesPerRank(ENTRIES).fault(Kind.NONE, -1)
        .workload(Workload.builder().gradients(Workload.Gradients.ALLREDUCE_COALESCED).build()).build();
    assertThat(healthy.culprits()).isEmpty();
    assertThat(healthy.faultyRank()).isEqualTo(-1);
    long firstId = healthy.dump(0).orElseThrow().records().get(0).getRecordId();
    assertThat(firstId).isPositive();
    for (int rank : healthy.ranksWithDumps()) {
      FlightRecorderDump d = healthy.dump(rank).orElseThrow();
      assertThat(d.records()).hasSize(ENTRIES).allSatisfy(r -> {
        assertThat(r.getState()).isEqualTo(CollectiveState.COMPLETED);
        assertThat(r.getRetired()).isTrue();
      });
      assertThat(d.records().get(0).getRecordId()).isEqualTo(firstId);
    }
  }

  @Test
  void refusesWhatCannotHappen() {
    assertThatThrownBy(() -> job(Kind.CPU_STALL, RANKS).build()).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("outside the world");
    assertThatThrownBy(() -> FaultyDumps.builder().ranks(16).fault(Kind.SIZE_MISMATCH, 3).build())
        .hasMessageContaining("at least 3 ranks");
    assertThatThrownBy(() -> FaultyDumps.builder().ranks(20)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> FaultyDumps.builder().version("3.0")).hasMessageContaining("2.2 to 2.10");
    assertThatThrownBy(() -> FaultyDumps.builder().fault(Kind.GPU_STALL, -1)).hasMessageContaining("needs a rank");
  }

  private static List<Integer> ranksOf(List<Path> files) {
    return files.stream().map(p -> DumpReader.rankFromFileName(p.getFileName().toString()).orElseThrow()).toList();
  }

  private static ProcessGroupProgress progressOf(FlightRecorderDump d, String group) {
    return d.progress().stream().filter(p -> p.getProcessGroup().equals(group)).findFirst().orElseThrow();
  }

  private static CollectiveRecord oldestOutstanding(FlightRecorderDump d) {
    return d.records().stream().filter(r -> r.getState() != CollectiveState.COMPLETED).findFirst().orElseThrow();
  }

  private static CollectiveRecord sameOp(FlightRecorderDump d, CollectiveRecord r) {
    return d.records().stream().filter(x -> x.getProcessGroup().equals(r.getProcessGroup())
        && x.getCollectiveSeq() == r.getCollectiveSeq() && x.getIsP2P() == r.getIsP2P()).findFirst().orElseThrow();
  }

  private static CollectiveRecord lastDataParallelAllReduce(FlightRecorderDump d) {
    List<String> dp = d.processGroups().stream().filter(g -> g.getDesc().equals("DATA_PARALLEL_GROUP"))
        .map(ProcessGroup::getName).toList();
    return Stream.iterate(d.records().size() - 1, i -> i >= 0, i -> i - 1).map(d.records()::get)
        .filter(r -> dp.contains(r.getProcessGroup()) && r.getOp().equals("all_reduce")).findFirst().orElseThrow();
  }
}
