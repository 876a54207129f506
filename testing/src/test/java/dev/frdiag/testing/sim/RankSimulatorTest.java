package dev.frdiag.testing.sim;

import static dev.frdiag.proto.v1.CollectiveState.COMPLETED;
import static dev.frdiag.proto.v1.CollectiveState.SCHEDULED;
import static dev.frdiag.proto.v1.CollectiveState.STARTED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.proto.FrdiagVersion;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.RankIdentity;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class RankSimulatorTest {
  private static final int FAULT_STEP = 2;
  /** Records per step of a default rank: tp 2, pp 2, ep 1, coalesced 2 + marker, dp 1, world 1. */
  private static final int RECORDS_PER_STEP = 10;
  private static final int RANK = 5;
  private static final int[] TP_PEERS_OF_RANK = {4, 6, 7};

  /** A clock that advances 1 µs per reading, so runs are reproducible. */
  private static LongSupplier fakeClock() {
    AtomicLong now = new AtomicLong(1_700_000_000_000_000_000L);
    return () -> now.addAndGet(1_000);
  }

  private static RankSimulator.Builder simulator() {
    return RankSimulator.builder().clock(fakeClock());
  }

  private static RankSimulator stalledAt(Fault fault) {
    RankSimulator sim = simulator().fault(fault).build();
    assertThat(sim.runSteps(10)).isEqualTo(FAULT_STEP);
    assertThat(sim.isStalled()).isTrue();
    assertThat(sim.stepsCompleted()).isEqualTo(FAULT_STEP);
    return sim;
  }

  @Test
  void healthyRunCompletesEveryRecordAndMembersAgreeOnSeqsAndCommsIds() {
    try (RankSimulator sim = simulator().build()) {
      assertThat(sim.runSteps(5)).isEqualTo(5);
      assertThat(sim.stepsCompleted()).isEqualTo(5);
      assertThat(sim.isStalled()).isFalse();
      for (int rank = 0; rank < 16; rank++) {
        List<CollectiveRecord> records = Records.all(sim.recorder(rank));
        assertThat(records).hasSize(5 * RECORDS_PER_STEP);
        assertThat(records).allSatisfy(r -> assertThat(r.getState()).isEqualTo(COMPLETED));
      }
      for (ProcessGroupSpec group : sim.topology().groups()) {
        List<String> first = null;
        for (int rank : group.ranks()) {
          // The op name is left out: a send on one side is a recv on the other.
          List<String> ops = Records.ofGroup(sim.recorder(rank), group.name()).stream()
              .map(r -> r.getCollectiveSeq() + "/" + r.getP2PSeq() + "/" + Long.toHexString(r.getCommsId()))
              .toList();
          assertThat(ops).as("ops of %s on rank %d", group, rank).isNotEmpty();
          if (first == null) {
            first = ops;
          }
          assertThat(ops).as("ops of %s on rank %d", group, rank).isEqualTo(first);
        }
        // One comms_id per seq, a different one for every seq.
        Map<String, Set<Long>> idsBySeq = Records.ofGroup(sim.recorder(group.ranks()[0]), group.name()).stream()
            .collect(Collectors.groupingBy(r -> r.getCollectiveSeq() + "/" + r.getP2PSeq(),
                Collectors.mapping(CollectiveRecord::getCommsId, Collectors.toSet())));
        assertThat(idsBySeq.values()).allSatisfy(ids -> assertThat(ids).hasSize(1));
        assertThat(idsBySeq.values().stream().flatMap(Set::stream).distinct().count())
            .isEqualTo(idsBySeq.size());
      }
    }
  }

  @Test
  void collectiveSeqAdvancesPerCollectiveAndPerCoalescedGroupP2pSeqSeparatelyOpIdPerOp() {
    try (RankSimulator sim = simulator().build()) {
      sim.runSteps(5);
      FlightRecorder stage0 = sim.recorder(2);

      List<CollectiveRecord> tp = Records.ofGroup(stage0, "tp0");
      assertThat(tp).extracting(CollectiveRecord::getCollectiveSeq).containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L,
          9L, 10L);
      assertThat(tp).extracting(CollectiveRecord::getOpId).containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L,
          10L);
      assertThat(tp).extracting(CollectiveRecord::getP2PSeq).containsOnly(0L);
      assertThat(tp.subList(0, 2)).extracting(CollectiveRecord::getOp)
          .containsExactly("_all_gather_base", "_reduce_scatter_base");

      List<CollectiveRecord> pp = Records.ofGroup(stage0, "pp2");
      assertThat(pp).extracting(CollectiveRecord::getP2PSeq).containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L,
          10L);
      assertThat(pp).extracting(CollectiveRecord::getOpId).containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L,
          10L);
      assertThat(pp).extracting(CollectiveRecord::getCollectiveSeq).containsOnly(0L);
      assertThat(pp).extracting(CollectiveRecord::getIsP2P).containsOnly(true);
      assertThat(pp).extracting(CollectiveRecord::getPeer).containsOnly(10);
      assertThat(pp.subList(0, 2)).extracting(CollectiveRecord::getOp).containsExactly("send", "recv");
      assertThat(Records.ofGroup(sim.recorder(10), "pp2").subList(0, 2)).extracting(CollectiveRecord::getOp)
          .containsExactly("recv", "send");

      List<CollectiveRecord> dp = Records.ofGroup(stage0, "dp2");
      assertThat(dp).hasSize(5 * 5);
      for (int step = 0; step < 5; step++) {
        List<CollectiveRecord> s = dp.subList(step * 5, step * 5 + 5);
        long seq = 3L * step;
        long op = 4L * step;
        assertThat(s).extracting(CollectiveRecord::getOp)
            .containsExactly("all_to_all", "all_reduce", "all_reduce", "coalesced", "all_reduce");
        assertThat(s).extracting(CollectiveRecord::getCollectiveSeq)
            .containsExactly(seq + 1, seq + 2, seq + 2, seq + 2, seq + 3);
        // The end marker shares the op_id of the group's last op.
        assertThat(s).extracting(CollectiveRecord::getOpId).containsExactly(op + 1, op + 2, op + 3, op + 3, op + 4);
      }

      assertThat(Records.ofGroup(stage0, "0")).extracting(CollectiveRecord::getCollectiveSeq)
          .containsExactly(1L, 2L, 3L, 4L, 5L);

      assertThat(Records.progress(stage0, "tp0").getLastEnqueuedSeq()).isEqualTo(10);
      assertThat(Records.progress(stage0, "tp0").getLastStartedSeq()).isEqualTo(10);
      assertThat(Records.progress(stage0, "tp0").getLastCompletedSeq()).isEqualTo(10);
      assertThat(Records.progress(stage0, "dp2").getLastCompletedSeq()).isEqualTo(15);
      assertThat(Records.progress(stage0, "pp2").getLastEnqueuedP2PSeq()).isEqualTo(10);
      assertThat(Records.progress(stage0, "pp2").getLastCompletedP2PSeq()).isEqualTo(10);
    }
  }

  @Test
  void recordsCarryTensorsStacksAndTheTimeout() {
    try (RankSimulator sim = simulator().collectiveTimeout(Duration.ofMinutes(30)).build()) {
      sim.runSteps(1);
      CollectiveRecord gather = Records.collective(sim.recorder(0), "tp0", 1);
      assertThat(gather.getInputSizes(0).getDimsList()).containsExactly(4096L, 4096L);
      assertThat(gather.getOutputSizes(0).getDimsList()).containsExactly(16384L, 4096L);
      assertThat(gather.getInputDtypesList()).containsExactly("BFloat16");
      assertThat(gather.getTimeoutMs()).isEqualTo(1_800_000);
      assertThat(gather.getFrameIdsCount()).isPositive();
      assertThat(sim.recorder(0).frame(gather.getFrameIds(1)).getFilename())
          .isEqualTo("megatron/core/tensor_parallel/mappings.py");
      CollectiveRecord loss = Records.collective(sim.recorder(0), "0", 1);
      assertThat(loss.getInputDtypesList()).containsExactly("Float");
      assertThat(loss.getTimeStartedNs()).isGreaterThan(loss.getTimeCreatedNs());
      assertThat(loss.getTimeCompletedNs()).isGreaterThan(loss.getTimeStartedNs());
    }
  }

  @Test
  void sameClockGivesTheSameRecords() {
    try (RankSimulator a = simulator().fault(Fault.gpuStall(3, 1)).build();
        RankSimulator b = simulator().fault(Fault.gpuStall(3, 1)).build()) {
      a.runSteps(3);
      b.runSteps(3);
      for (int rank : new int[] {0, 3, 15}) {
        assertThat(Records.all(a.recorder(rank))).isEqualTo(Records.all(b.recorder(rank)));
      }
    }
  }

  @Test
  void cpuStalledRankEnqueuesLessInItsTensorParallelGroupThanItsPeers() {
    try (RankSimulator sim = stalledAt(Fault.cpuStall(RANK, FAULT_STEP))) {
      FlightRecorder stalled = sim.recorder(RANK);
      assertThat(stalled.nextRecordId()).isEqualTo(FAULT_STEP * RECORDS_PER_STEP);
      assertThat(Records.all(stalled)).allSatisfy(r -> assertThat(r.getState()).isEqualTo(COMPLETED));
      assertThat(Records.progress(stalled, "tp1").getLastEnqueuedSeq()).isEqualTo(4);
      for (int peer : TP_PEERS_OF_RANK) {
        FlightRecorder recorder = sim.recorder(peer);
        assertThat(Records.progress(recorder, "tp1").getLastEnqueuedSeq()).isEqualTo(6);
        assertThat(Records.state(recorder, "tp1", 5)).isEqualTo(STARTED);
        assertThat(Records.state(recorder, "tp1", 6)).isEqualTo(SCHEDULED);
      }
      for (int rank = 0; rank < 16; rank++) {
        assertThat(Records.progress(sim.recorder(rank), "0").getLastCompletedSeq()).isEqualTo(FAULT_STEP);
      }
    }
  }

  @Test
  void gpuStalledRankLeavesItsWholeStepScheduledWherePeersStarted() {
    try (RankSimulator sim = stalledAt(Fault.gpuStall(RANK, FAULT_STEP))) {
      FlightRecorder stalled = sim.recorder(RANK);
      assertThat(stalled.nextRecordId()).isEqualTo((FAULT_STEP + 1) * RECORDS_PER_STEP);
      List<CollectiveRecord> step = Records.all(stalled).subList(FAULT_STEP * RECORDS_PER_STEP,
          (FAULT_STEP + 1) * RECORDS_PER_STEP);
      assertThat(step).allSatisfy(r -> assertThat(r.getState()).isEqualTo(SCHEDULED));
      assertThat(Records.progress(stalled, "0").getLastEnqueuedSeq()).isEqualTo(FAULT_STEP + 1);
      assertThat(Records.state(stalled, "tp1", 5)).isEqualTo(SCHEDULED);
      assertThat(Records.progress(stalled, "tp1").getLastStartedSeq()).isEqualTo(4);
      for (int peer : TP_PEERS_OF_RANK) {
        assertThat(Records.state(sim.recorder(peer), "tp1", 5)).isEqualTo(STARTED);
        assertThat(Records.progress(sim.recorder(peer), "tp1").getLastStartedSeq()).isEqualTo(5);
      }
    }
  }

  @Test
  void fabricFailureLeavesTheWorldAllReduceStartedEverywhereAndCompletedNowhere() {
    try (RankSimulator sim = stalledAt(Fault.fabric(FAULT_STEP))) {
      for (int rank = 0; rank < 16; rank++) {
        FlightRecorder recorder = sim.recorder(rank);
        CollectiveRecord world = Records.collective(recorder, "0", FAULT_STEP + 1);
        assertThat(world.getState()).isEqualTo(STARTED);
        assertThat(Records.all(recorder)).filteredOn(r -> r.getState() != COMPLETED).containsExactly(world);
      }
    }
  }

  @Test
  void mismatchedRankIssuesAHalvedAllReduceAndItsDataParallelGroupHangsInIt() {
    try (RankSimulator sim = stalledAt(Fault.mismatch(RANK, FAULT_STEP))) {
      long seq = 3L * (FAULT_STEP + 1);
      CollectiveRecord bad = Records.collective(sim.recorder(RANK), "dp1", seq);
      CollectiveRecord good = Records.collective(sim.recorder(1), "dp1", seq);
      assertThat(bad.getOp()).isEqualTo("all_reduce");
      assertThat(bad.getCommsId()).isEqualTo(good.getCommsId());
      assertThat(bad.getInputSizes(0).getDimsList()).containsExactly(2048L, 4096L);
      assertThat(good.getInputSizes(0).getDimsList()).containsExactly(4096L, 4096L);
      assertThat(bad.getOutputSizes(0).getDimsList()).containsExactly(2048L, 4096L);
      assertThat(bad.getState()).isEqualTo(STARTED);
      assertThat(good.getState()).isEqualTo(STARTED);
      assertThat(Records.state(sim.recorder(0), "dp0", seq)).isEqualTo(COMPLETED);
      assertThat(Records.state(sim.recorder(0), "0", FAULT_STEP + 1)).isEqualTo(STARTED);
      assertThat(Records.state(sim.recorder(RANK), "0", FAULT_STEP + 1)).isEqualTo(SCHEDULED);
    }
  }

  @Test
  void deadRankIssuesNothingFromItsFaultStep() {
    try (RankSimulator sim = stalledAt(Fault.deadRank(RANK, FAULT_STEP))) {
      FlightRecorder dead = sim.recorder(RANK);
      assertThat(dead.nextRecordId()).isEqualTo(FAULT_STEP * RECORDS_PER_STEP);
      assertThat(Records.all(dead)).allSatisfy(r -> assertThat(r.getState()).isEqualTo(COMPLETED));
      assertThat(Records.progress(dead, "0").getLastEnqueuedSeq()).isEqualTo(FAULT_STEP);
      for (int peer : TP_PEERS_OF_RANK) {
        assertThat(Records.state(sim.recorder(peer), "tp1", 5)).isEqualTo(STARTED);
        assertThat(Records.state(sim.recorder(peer), "0", FAULT_STEP + 1)).isEqualTo(SCHEDULED);
      }
    }
  }

  @Test
  void faultAtTheFirstStepStallsBeforeAnyStepCompletes() {
    try (RankSimulator sim = simulator().fault(Fault.cpuStall(0, 0)).build()) {
      assertThat(sim.runSteps(3)).isZero();
      assertThat(sim.isStalled()).isTrue();
      assertThat(sim.recorder(0).nextRecordId()).isZero();
    }
  }

  @Test
  @Timeout(value = 20, unit = TimeUnit.SECONDS)
  void drivesFourThousandRanksWithSmallRecorders() {
    Topology big = Topology.builder().worldSize(4096).build();
    try (RankSimulator sim = RankSimulator.builder().topology(big).recorderCapacity(256).build()) {
      assertThat(sim.runSteps(3)).isEqualTo(3);
      for (int rank : new int[] {0, 2047, 2048, 4095}) {
        FlightRecorder recorder = sim.recorder(rank);
        assertThat(recorder.capacity()).isEqualTo(256);
        assertThat(recorder.nextRecordId()).isEqualTo(3 * RECORDS_PER_STEP);
        assertThat(Records.all(recorder)).allSatisfy(r -> assertThat(r.getState()).isEqualTo(COMPLETED));
        assertThat(Records.progress(recorder, "0").getLastCompletedSeq()).isEqualTo(3);
        assertThat(recorder.lostUpdates()).isZero();
      }
    }
  }

  @Test
  void drivesStepsOnItsOwnThreadAndIdlesOnceStalled() throws InterruptedException {
    RankSimulator sim = simulator().fault(Fault.cpuStall(RANK, 3)).stepInterval(Duration.ofMillis(1)).build();
    Thread driver;
    try {
      sim.start();
      assertThat(sim.awaitStalled(Duration.ofSeconds(10))).isTrue();
      assertThat(sim.stepsCompleted()).isEqualTo(3);
      driver = driverThread();
      // Idle means parked on the condition, not spinning.
      await().atMost(Duration.ofSeconds(5)).until(() -> driver.getState() == Thread.State.WAITING);
    } finally {
      sim.close();
    }
    assertThat(driver.isAlive()).isFalse();
  }

  @Test
  void stopsAtTheStepLimitWithoutStalling() {
    try (RankSimulator sim = simulator().steps(4).stepInterval(Duration.ZERO).build()) {
      sim.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> sim.stepsCompleted() == 4);
      await().during(Duration.ofMillis(100)).atMost(Duration.ofSeconds(2))
          .until(() -> sim.stepsCompleted() == 4 && !sim.isStalled());
    }
    try (RankSimulator sim = simulator().steps(4).build()) {
      assertThat(sim.runSteps(10)).isEqualTo(4);
      assertThat(sim.runSteps(1)).isZero();
      assertThat(sim.isStalled()).isFalse();
    }
  }

  @Test
  void awaitStalledTimesOutOnAHealthyJob() throws InterruptedException {
    try (RankSimulator sim = simulator().build()) {
      sim.start();
      assertThat(sim.awaitStalled(Duration.ofMillis(50))).isFalse();
    }
  }

  @Test
  void closeIsIdempotentAndEndsUse() {
    RankSimulator sim = simulator().build();
    sim.start();
    assertThatThrownBy(() -> sim.runSteps(1)).isInstanceOf(IllegalStateException.class)
        .hasMessage("the simulator is driven by its own thread since start()");
    sim.close();
    sim.close();
    assertThatThrownBy(() -> sim.runSteps(1)).isInstanceOf(IllegalStateException.class)
        .hasMessage("the simulator is closed");
    assertThatThrownBy(sim::start).isInstanceOf(IllegalStateException.class)
        .hasMessage("the simulator is closed");
  }

  @Test
  void describesEachRankLikeARealProcess() {
    try (RankSimulator sim = simulator().jobId("llama-70b").build()) {
      RankIdentity id = sim.identity(11);
      assertThat(id.getJobId()).isEqualTo("llama-70b");
      assertThat(id.getGlobalRank()).isEqualTo(11);
      assertThat(id.getWorldSize()).isEqualTo(16);
      assertThat(id.getLocalRank()).isEqualTo(3);
      assertThat(id.getHostname()).isEqualTo("node01");
      assertThat(id.getPid()).isEqualTo(10011);
      assertThat(id.getCudaDevice()).isEqualTo(3);
      assertThat(id.getFrameworkVersion()).isEqualTo("simulated");
      assertThat(id.getNcclVersion()).isEqualTo("2.27.3");
      assertThat(id.getFrdiagVersion()).isEqualTo(FrdiagVersion.current());
      assertThat(sim.reporter(11)).isEmpty();
      assertThat(sim.recorder(11).processGroups()).extracting(g -> g.getName())
          .containsExactly("0", "tp2", "pp3", "dp7");
    }
  }

  @Test
  void rejectsFaultsThatDoNotFitTheTopology() {
    assertThatThrownBy(() -> simulator().fault(Fault.gpuStall(16, 1)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("fault rank 16 is outside the world of 16 ranks");
    Topology noDataParallel = Topology.builder().worldSize(8).build();
    assertThatThrownBy(() -> simulator().topology(noDataParallel).fault(Fault.mismatch(1, 1)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a MISMATCH fault needs data-parallel groups of at least 2 ranks, the topology has 1");
    assertThatThrownBy(() -> simulator().recorderCapacity(0))
        .hasMessage("recorderCapacity must be at least 1, got 0");
    assertThatThrownBy(() -> simulator().stepInterval(Duration.ofMillis(-1)))
        .hasMessage("stepInterval must not be negative, got PT-0.001S");
    assertThatThrownBy(() -> Fault.cpuStall(-1, 0)).hasMessage("fault rank must not be negative, got -1");
  }

  private static Thread driverThread() {
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("frdiag-sim-driver"))
        .findFirst().orElseThrow();
  }
}
