package dev.frdiag.daemon.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.Liveness;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ThreadStack;
import dev.frdiag.proto.v1.ThreadStacks;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.RecordBatch;
import dev.frdiag.proto.v1.RecordTemplate;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.report.Report.Trigger;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntFunction;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The watchdog's triggers, driven with an explicit clock. */
class JobTest {
  private static final long S = 1_000_000_000L;
  private static final Duration STALL = Duration.ofSeconds(30);
  private static final Duration HEARTBEAT = Duration.ofSeconds(15);
  private static final Duration GRACE = Duration.ofSeconds(30);

  private static final ProcessGroup WORLD = ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1)
      .setGlobalRankStride(1).build();

  private static Job twoRanks() {
    return twoRanks(WORLD);
  }

  /** Ranks 0 and 1, each a member of {@code groups}. */
  private static Job twoRanks(ProcessGroup... groups) {
    Job job = job(2, 16, Limits.defaults());
    for (int r = 0; r < 2; r++) {
      job.attach(RankIdentity.newBuilder().setJobId("j").setGlobalRank(r).setWorldSize(2).setPid(r).build(),
          List.of(groups), request -> { }, "s" + r, 0, 0, 0);
    }
    return job;
  }

  private static ProcessGroupProgress progress(long enqueued, long completed) {
    return ProcessGroupProgress.newBuilder().setProcessGroup("0").setLastEnqueuedSeq(enqueued)
        .setLastCompletedSeq(completed).setLastEnqueuedP2PSeq(-1).setLastCompletedP2PSeq(-1).build();
  }

  /** Records 0..n-1 of all_reduce seqs 0..n-1 on the world group, record i in {@code state.apply(i)}. */
  private static List<CollectiveRecord> allReduces(int n, IntFunction<CollectiveState> state) {
    return IntStream.range(0, n).mapToObj(i -> CollectiveRecord.newBuilder().setRecordId(i).setProcessGroup("0")
        .setOp("all_reduce").setCollectiveSeq(i).setTimeCreatedNs(1 + i).setState(state.apply(i)).build()).toList();
  }

  private static RecordBatch batch(List<CollectiveRecord> records) {
    return RecordBatch.newBuilder().addAllRecords(records).build();
  }

  /** A heartbeat of both ranks at {@code seconds} on the daemon's clock, with these seqs on the world group. */
  private static void heartbeats(Job job, long enqueued, long completed, long seconds) {
    for (int r = 0; r < 2; r++) {
      job.heartbeat(r, "s" + r, List.of(progress(enqueued, completed)), 0, 0, false, seconds * S, 0);
    }
  }

  /**
   * {@code replies} as a gather of request 1 keeps them, by rank: each sent on the rank's session "s" + rank, the
   * gather then ended.
   */
  private static Map<Integer, DumpReply> gathered(Job job, Map<Integer, DumpReply> replies) {
    Gather g = job.incident().startGather(DumpRequest.newBuilder().setRequestId(1).build(), Set.of(), false,
        () -> 0);
    try {
      Map<Integer, String> sessions = new java.util.TreeMap<>();
      replies.keySet().forEach(rank -> sessions.put(rank, "s" + rank));
      g.expect(sessions);
      replies.forEach((rank, reply) -> job.dumpReply(rank, "s" + rank, reply));
      return g.replies();
    } finally {
      job.incident().endGather(g);
    }
  }

  /** Job "j", created at time 0, as the registry creates it with these limits. */
  static Job job(int worldSize, int window, Limits limits) {
    return new Job("j", worldSize, window, limits,
        new StateBudget(limits.maxStateBytes()).share("job j", limits.maxJobStateBytes(),
            "--max-job-state-bytes"), new OnDemandSlots(limits.maxInvestigations()), 0, 0);
  }

  @Test
  void aGroupWithOutstandingWorkAndNoProgressForTheStallTimeoutOpensAnIncident() {
    Job job = twoRanks();
    heartbeats(job, 5, 4, 1);
    heartbeats(job, 5, 4, 20);
    assertThat(job.incident().openIfDue(20 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    heartbeats(job, 5, 4, 31);
    assertThat(job.incident().openIfDue(31 * S, 0, STALL, HEARTBEAT, GRACE)).isEqualTo(Trigger.STALL);
  }

  /** Ranks 0 and 1 of job "j", connected before the daemon restarted; expected back until 15 s. */
  private static Job restartedWithTwoRanks() {
    Job job = job(2, 16, Limits.defaults());
    job.expectBack(List.of(RankIdentity.newBuilder().setJobId("j").setGlobalRank(0).setWorldSize(2).setPid(0)
        .setHostname("node0").build(), RankIdentity.newBuilder().setJobId("j").setGlobalRank(1).setWorldSize(2)
        .setPid(1).setHostname("node1").build()), List.of("agents"), 15 * S);
    return job;
  }

  private static void reconnect(Job job, int rank, long seconds) {
    job.attach(RankIdentity.newBuilder().setJobId("j").setGlobalRank(rank).setWorldSize(2).setPid(rank).build(),
        List.of(WORLD), request -> { }, "s" + rank, 0, seconds * S, 0);
  }

  @Test
  void afterARestartAStallIsNotJudgedUntilEveryRankConnectedBeforeIsBack() {
    Job job = restartedWithTwoRanks();
    reconnect(job, 0, 1);
    job.heartbeat(0, "s0", List.of(progress(5, 4)), 0, 0, false, 1 * S, 0);
    job.heartbeat(0, "s0", List.of(progress(5, 4)), 0, 0, false, 12 * S, 0);
    assertThat(job.awaitingReturn(12 * S)).isTrue();
    assertThat(job.incident().openIfDue(12 * S, 0, Duration.ofSeconds(2), HEARTBEAT, GRACE))
        .as("rank 1 may still come back").isNull();

    reconnect(job, 1, 13);
    heartbeats(job, 5, 4, 13);
    assertThat(job.awaitingReturn(13 * S)).isFalse();
    heartbeats(job, 5, 4, 16);
    assertThat(job.incident().openIfDue(16 * S, 0, Duration.ofSeconds(2), HEARTBEAT, GRACE)).isEqualTo(Trigger.STALL);
    assertThat(job.evidence(Map.of(), 0, STALL, "").ranks()).extracting(RankEvidence::liveness)
        .containsOnly(Liveness.ALIVE);
  }

  @Test
  void aRankNotBackInItsTimeIsLostAndItsLossJudged() {
    Job job = restartedWithTwoRanks();
    reconnect(job, 0, 1);
    assertThat(job.incident().openIfDue(14 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    assertThat(job.incident().openIfDue(15 * S, 0, STALL, HEARTBEAT, GRACE)).as("lost only now").isNull();
    job.heartbeat(0, "s0", List.of(progress(5, 5)), 0, 0, false, 44 * S, 0);
    assertThat(job.incident().openIfDue(45 * S, 0, STALL, HEARTBEAT, GRACE)).as("after the lost grace")
        .isEqualTo(Trigger.HEARTBEAT_LOST);
    assertThat(job.summary().getRanksLost()).isEqualTo(1);
    assertThat(job.evidence(Map.of(), 0, STALL, "").ranks()).filteredOn(e -> e.rank() == 1).singleElement()
        .satisfies(e -> {
          assertThat(e.liveness()).as("unheard, perhaps alive: not taken for dead").isEqualTo(Liveness.UNKNOWN);
          assertThat(e.identity().getHostname()).isEqualTo("node1");
        });
  }

  @Test
  void afterARestartTheJobIsStillBoundToItsWritersWhileItsRanksAreAway() {
    Job job = restartedWithTwoRanks();
    assertThat(job.admitWriter("someone-else")).as("the first to reach the restarted daemon").isFalse();
    assertThat(job.admitWriter("agents")).isTrue();
  }

  @Test
  void aJobNoRankOfWhichCameBackEndedWhileTheDaemonWasAwayAndIsNotJudged() {
    Job job = restartedWithTwoRanks();
    assertThat(job.idle(10 * S, Duration.ZERO)).as("not idle while its ranks may come back").isFalse();
    assertThat(job.incident().openIfDue(16 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    assertThat(job.incident().openIfDue(60 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    assertThat(job.summary().getRanksFinished()).isEqualTo(2);
    assertThat(job.idle(60 * S, Duration.ZERO)).isTrue();
    assertThat(job.connected()).isEmpty();
  }

  @Test
  void theStacksARankRepliesWithReachTheAnalysis() {
    Job job = twoRanks();
    ThreadStacks asleep = ThreadStacks.newBuilder().setSource("dump_traceback").addThreads(ThreadStack.newBuilder()
        .setThreadId(0x7f27775ebb80L).addFrames(Frame.newBuilder().setName("sleep_forever").setFilename("train.py")
            .setLine(106))).build();
    // Rank 0 never issued #2, which rank 1 did; rank 0's main thread sleeps in its own code.
    DumpReply stalled = DumpReply.newBuilder().setRequestId(1)
        .addAllRecords(allReduces(2, i -> CollectiveState.COMPLETED)).setStacks(asleep).build();
    DumpReply waiting = DumpReply.newBuilder().setRequestId(1)
        .addAllRecords(allReduces(3, i -> i < 2 ? CollectiveState.COMPLETED : CollectiveState.SCHEDULED)).build();
    Map<Integer, DumpReply> replies = gathered(job, Map.of(0, stalled, 1, waiting));

    Diagnosis d = HangAnalyzer.analyze(job.evidence(replies, 0, STALL, "not asked"));

    assertThat(d.culpritRanks()).containsExactly(0);
    assertThat(d.culprits().get(0).stuckAt()).isEqualTo("sleep_forever (train.py:106)");
    assertThat(d.culprits().get(0).stacksFrom()).isEqualTo("dump_traceback");
  }

  @Test
  void heartbeatsThatArriveLateAreJudgedByWhenTheRanksSentThem() {
    Job job = twoRanks();
    long sent = 1_700_000_000L * S;
    job.heartbeat(0, "s0", List.of(progress(5, 4)), 0, sent, false, 1 * S, 0);
    job.heartbeat(1, "s1", List.of(progress(5, 4)), 0, sent, false, 1 * S, 0);
    // A daemon behind its intake: heartbeats sent 2 s later arrive 30 s later. The ranks were not stuck for 30 s.
    job.heartbeat(0, "s0", List.of(progress(5, 4)), 0, sent + 2 * S, false, 31 * S, 0);
    job.heartbeat(1, "s1", List.of(progress(5, 4)), 0, sent + 2 * S, false, 31 * S, 0);
    assertThat(job.incident().openIfDue(31 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    // Their own heartbeats then say they made no progress for 31 s: that is a stall, however late it arrives.
    job.heartbeat(0, "s0", List.of(progress(5, 4)), 0, sent + 31 * S, false, 40 * S, 0);
    job.heartbeat(1, "s1", List.of(progress(5, 4)), 0, sent + 31 * S, false, 40 * S, 0);
    assertThat(job.incident().openIfDue(40 * S, 0, STALL, HEARTBEAT, GRACE)).isEqualTo(Trigger.STALL);
  }

  @Test
  void aGroupThatSatIdleIsQuietOnlyFromWhenItHadWorkAgain() {
    Job job = twoRanks();
    heartbeats(job, 4, 4, 1);
    // Idle for a minute, then seq 5 issued: it has been outstanding for 1 s, not 61.
    heartbeats(job, 5, 4, 61);
    heartbeats(job, 5, 4, 62);
    assertThat(job.incident().openIfDue(62 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    heartbeats(job, 5, 4, 91);
    assertThat(job.incident().openIfDue(91 * S, 0, STALL, HEARTBEAT, GRACE)).isEqualTo(Trigger.STALL);
  }

  @Test
  void progressKeepsTheWatchdogQuiet() {
    Job job = twoRanks();
    for (long t = 1; t <= 100; t += 5) {
      job.heartbeat(0, "s0", List.of(progress(t + 1, t)), 0, 0, false, t * S, 0);
      job.heartbeat(1, "s1", List.of(progress(t + 1, t)), 0, 0, false, t * S, 0);
      assertThat(job.incident().openIfDue(t * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    }
  }

  @Test
  void aLostStreamOpensAnIncidentAfterTheGraceAndSilenceOnlyAfterHeartbeatTimeoutPlusGrace() {
    Job lost = twoRanks();
    lost.lost(1, "s1", 10 * S);
    assertThat(lost.incident().openIfDue(20 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    assertThat(lost.incident().openIfDue(40 * S, 0, STALL, HEARTBEAT, GRACE)).isEqualTo(Trigger.RANK_LOST);

    Job silent = twoRanks();
    silent.heartbeat(0, "s0", List.of(), 0, 0, false, 20 * S, 0);
    assertThat(silent.incident().openIfDue(20 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    // Rank 1 last spoke at 0: silent from 16 s on, an incident only once the grace has passed too.
    silent.heartbeat(0, "s0", List.of(), 0, 0, false, 40 * S, 0);
    assertThat(silent.incident().openIfDue(40 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    silent.heartbeat(0, "s0", List.of(), 0, 0, false, 71 * S, 0);
    assertThat(silent.incident().openIfDue(71 * S, 0, STALL, HEARTBEAT, GRACE)).isEqualTo(Trigger.HEARTBEAT_LOST);
  }

  @Test
  void aSilentRankThatSpeaksAgainIsAliveAndOnlyAnEndedStreamIsLost() {
    Job job = twoRanks();
    job.heartbeat(0, "s0", List.of(), 0, 0, false, 20 * S, 0);
    job.incident().openIfDue(20 * S, 0, STALL, HEARTBEAT, GRACE);
    job.heartbeat(1, "s1", List.of(), 0, 0, false, 21 * S, 0);
    assertThat(job.summary().getRanksLost()).isZero();
    job.lost(1, "s1", 22 * S);
    assertThat(job.summary().getRanksLost()).isEqualTo(1);
  }

  @Test
  void anEventTriggeredIncidentClosesAfterItsReportSoTheNextHangIsReportedToo() {
    Job job = twoRanks();
    job.event(0, "s0", dev.frdiag.proto.v1.RankEvent.newBuilder()
        .setKind(dev.frdiag.proto.v1.RankEvent.Kind.WATCHDOG_TIMEOUT).build(), 1 * S);
    assertThat(job.incident().openIfDue(1 * S, 0, STALL, HEARTBEAT, GRACE)).isEqualTo(Trigger.WATCHDOG_TIMEOUT);
    job.incident().reported(2 * S, null);
    // A late timeout line from another rank is part of the same hang.
    job.event(1, "s1", dev.frdiag.proto.v1.RankEvent.newBuilder()
        .setKind(dev.frdiag.proto.v1.RankEvent.Kind.WATCHDOG_TIMEOUT).build(), 3 * S);
    job.incident().closeIfOver(10 * S, STALL);
    assertThat(job.incident().isOpen()).isTrue();
    job.incident().closeIfOver(33 * S, STALL);
    assertThat(job.incident().isOpen()).isFalse();
    assertThat(job.incident().openIfDue(33 * S, 0, STALL, HEARTBEAT, GRACE)).isNull();
    job.event(1, "s1", dev.frdiag.proto.v1.RankEvent.newBuilder()
        .setKind(dev.frdiag.proto.v1.RankEvent.Kind.WATCHDOG_TIMEOUT).build(), 40 * S);
    assertThat(job.incident().openIfDue(40 * S, 0, STALL, HEARTBEAT, GRACE)).isEqualTo(Trigger.WATCHDOG_TIMEOUT);
  }

  @Test
  void aStreamThatLostItsRankToANewSessionSpeaksForItNoMore() {
    Job job = twoRanks();
    // Rank 1 goes silent past the heartbeat timeout; its process restarts and connects on a new stream.
    job.heartbeat(0, "s0", List.of(), 0, 0, false, 20 * S, 0);
    job.incident().openIfDue(20 * S, 0, STALL, HEARTBEAT, GRACE);
    job.attach(RankIdentity.newBuilder().setJobId("j").setGlobalRank(1).setWorldSize(2).setPid(11).build(),
        List.of(ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1).setGlobalRankStride(1).build()),
        request -> { }, "s1-new", 0, 21 * S, 0);

    job.heartbeat(1, "s1", List.of(progress(9, 9)), 0, 0, false, 22 * S, 0);
    job.finished(1, "s1");
    job.lost(1, "s1", 23 * S);
    assertThat(job.isCurrent(1, "s1")).isFalse();
    assertThat(job.isCurrent(1, "s1-new")).isTrue();
    assertThat(job.summary().getRanksConnected()).as("the old stream's goodbye and loss change nothing").isEqualTo(2);
    assertThat(job.evidence(java.util.Map.of(), 0, STALL, "").ranks().get(1).progress())
        .as("the old stream's progress is not the rank's").isEmpty();
  }

  @Test
  void anUnansweredRanksWindowIsVouchedForAsOfItsNewestHeartbeatThatSaidEveryRecordHadArrived() {
    Job job = twoRanks();
    job.heartbeat(0, "s0", List.of(progress(5, 4)), 0, 70 * S, true, 1 * S, 0);
    job.heartbeat(1, "s1", List.of(progress(5, 4)), 0, 70 * S, true, 1 * S, 0);
    job.heartbeat(1, "s1", List.of(progress(5, 4)), 0, 71 * S, false, 2 * S, 0);
    var ranks = job.evidence(Map.of(), 0, STALL, "not asked").ranks();
    assertThat(ranks.get(0).windowCurrentAtNs()).isEqualTo(70 * S);
    assertThat(ranks.get(1).windowCurrentAtNs()).as("its newest went out while records were written")
        .isEqualTo(70 * S);

    job.lost(1, "s1", 3 * S);
    job.attach(RankIdentity.newBuilder().setJobId("j").setGlobalRank(1).setWorldSize(2).setPid(1).build(),
        List.of(WORLD), request -> { }, "s1-again", 0, 4 * S, 0);
    assertThat(job.evidence(Map.of(), 0, STALL, "not asked").ranks().get(1).windowCurrentAtNs())
        .as("a new stream vouches for nothing until its own heartbeat does").isZero();
  }

  @Test
  void progressOfAGroupTheRankNeverAnnouncedIsNotKept() {
    Job job = twoRanks();
    job.heartbeat(0, "s0", List.of(progress(5, 4), ProcessGroupProgress.newBuilder().setProcessGroup("ghost")
        .setLastEnqueuedSeq(9).build()), 0, 0, false, 1 * S, 0);
    assertThat(job.evidence(java.util.Map.of(), 0, STALL, "").ranks().get(0).progress())
        .extracting(ProcessGroupProgress::getProcessGroup).containsExactly("0");
  }

  @Test
  void nodeContextBeyondTheJobsByteLimitIsRefusedAndTheEarlierContextKept() {
    Job job = job(2, 16, Limits.builder().maxContextBytesPerJob(64 * 1024).build());
    dev.frdiag.proto.v1.NodeContext small = dev.frdiag.proto.v1.NodeContext.newBuilder().setJobId("j")
        .setHostname("a").build();
    job.context(small, 0);
    dev.frdiag.proto.v1.NodeContext big = small.toBuilder().setHostname("b")
        .addFindings(dev.frdiag.proto.v1.ContextFinding.newBuilder().setDetail("x".repeat(70 * 1024))).build();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> job.context(big, 0))
        .isInstanceOf(LimitExceededException.class).hasMessageContaining("more than its limit of 65536");
    assertThat(job.evidence(java.util.Map.of(), 0, STALL, "").context()).containsExactly(small);
  }
  @Test
  void aJobTooLargeForTheRecordBudgetKeepsFewerRecordsPerRankButNeverFewerThanTheFloor() {
    Limits budget = Limits.builder().maxRecordsPerJob(64).build();
    Job job = job(4, 512, budget);
    assertThat(job.window()).as("64 records over 4 ranks is 16, under the floor").isEqualTo(Limits.MIN_WINDOW);
    ProcessGroup world = ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1).addRanks(2).addRanks(3)
        .setGlobalRankStride(1).build();
    job.attach(RankIdentity.newBuilder().setJobId("j").setGlobalRank(0).setWorldSize(4).setPid(1).build(),
        List.of(world), request -> { }, "s0", 0, 0, 0);
    List<CollectiveRecord> records = new java.util.ArrayList<>();
    for (int i = 0; i < 100; i++) {
      records.add(CollectiveRecord.newBuilder().setRecordId(i).setProcessGroup("0").setOp("all_reduce")
          .setCollectiveSeq(i).setTimeCreatedNs(1 + i).build());
    }
    job.records(0, "s0", batch(records), new TemplateTable(), 1);

    List<CollectiveRecord> kept = job.evidence(Map.of(), 0, STALL, "not asked").ranks().get(0).records();
    assertThat(kept).hasSize(Limits.MIN_WINDOW);
    assertThat(kept.get(kept.size() - 1).getRecordId()).as("the newest are kept").isEqualTo(99);
    assertThat(Limits.defaults().windowFor(512, 16)).isEqualTo(512);
    assertThat(Limits.defaults().windowFor(512, 16_384)).isEqualTo(61);
    assertThat(Limits.defaults().windowFor(512, 100_000)).isEqualTo(Limits.MIN_WINDOW);
  }

  @Test
  void aSnapshotReplyNamingTemplatesIsTakenInAsTheWholeRecordsTheyStandFor() {
    Job job = twoRanks();
    RecordTemplate template = RecordTemplate.newBuilder().setId(1).setProcessGroup("0").setOp("all_reduce")
        .addInputDtypes("Float").addFrameIds(4).setBackend("nccl").build();
    CollectiveRecord whole = CollectiveRecord.newBuilder().setRecordId(3).setProcessGroup("0").setOp("all_reduce")
        .addInputDtypes("Float").addFrameIds(4).setBackend("nccl").setCollectiveSeq(2)
        .setState(CollectiveState.STARTED).setTimeCreatedNs(10).setTimeStartedNs(11).build();
    CollectiveRecord naming = whole.toBuilder().clearProcessGroup().clearOp().clearInputDtypes().clearFrameIds()
        .clearBackend().setTemplateId(1).build();
    job.records(0, "s0", batch(List.of(whole)), new TemplateTable(), 1);
    CollectiveRecord kept = job.evidence(Map.of(), 0, STALL, "not asked").ranks().get(0).records().get(0);

    DumpReply compact = gathered(job, Map.of(1, DumpReply.newBuilder().setRequestId(1).addTemplates(template)
        .addRecords(naming).build())).get(1);
    assertThat(compact.getRecordsList()).containsExactly(whole);
    assertThat(compact.getTemplatesList()).isEmpty();
    assertThat(compact.getRecords(0).getOp()).as("the job's copy").isSameAs(kept.getOp());
  }

  @Test
  void aSnapshotReplyNoGatherAwaitsIsCheckedAndDropped() {
    Job job = twoRanks();
    Gather ended = job.incident().startGather(DumpRequest.newBuilder().setRequestId(1).build(), Set.of(), false,
        () -> 0);
    ended.expect(Map.of(0, "s0", 1, "s1"));
    job.incident().endGather(ended);

    job.dumpReply(1, "s1", DumpReply.newBuilder().setRequestId(1).addRecords(allReduces(1,
        i -> CollectiveState.STARTED).get(0)).build());

    assertThat(ended.replies()).as("late: the gather had ended").isEmpty();
    assertThat(job.incident().gathers()).isEmpty();
  }

  @Test
  void aSnapshotReplyIsCheckedAgainstTheGroupsItsRankAnnounced() {
    Job job = twoRanks();
    DumpReply stranger = DumpReply.newBuilder().setRequestId(1).addRecords(allReduces(1, i -> CollectiveState.STARTED)
        .get(0).toBuilder().setProcessGroup("9")).build();

    assertThatThrownBy(() -> job.dumpReply(0, "s0", stranger)).as("no gather awaits it")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("record 0 names process group '9' that was never announced");
    assertThatThrownBy(() -> gathered(job, Map.of(0, stranger))).as("a gather awaits it")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("record 0 names process group '9' that was never announced");
  }

  @Test
  void aBatchThatFailsACheckIsNotTakenIn() {
    Job job = twoRanks();
    List<CollectiveRecord> records = allReduces(3, i -> CollectiveState.STARTED);
    RecordBatch bad = batch(records).toBuilder().addRecords(records.get(2).toBuilder().setRecordId(3)
        .setTemplateId(7)).build();

    assertThatThrownBy(() -> job.records(0, "s0", bad, new TemplateTable(), 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("record 3 names template 7 that was not sent before it");
    assertThat(job.evidence(Map.of(), 0, STALL, "not asked").ranks().get(0).records()).isEmpty();
  }

  @Test
  void aSnapshotReplySayingItsRecordsAreOnTheStreamAnswersWithTheRanksWindow() {
    Job job = twoRanks();
    List<CollectiveRecord> records = allReduces(5, i -> i < 4 ? CollectiveState.COMPLETED : CollectiveState.SCHEDULED);
    job.records(0, "s0", batch(records), new TemplateTable(), 1);
    DumpReply onStream = DumpReply.newBuilder().setRequestId(1).setRecordsOnStream(true)
        .addProgress(progress(4, 3)).build();

    var rank0 = job.evidence(Map.of(0, onStream), 0, STALL, "not asked").ranks().get(0);
    assertThat(rank0.answered()).as("it answered, fresh").isTrue();
    assertThat(rank0.records()).as("its window, which the stream brought up to the reply").isEqualTo(records);
    assertThat(rank0.progress()).as("the reply's own progress").containsExactly(progress(4, 3));
    assertThat(gathered(job, Map.of(0, onStream)).get(0)).as("nothing to share, taken as it is")
        .isSameAs(onStream);
  }

  @Test
  void evidenceBuiltAheadIsTheIncidentsEvidenceWhereTheWindowsDidNotChange() {
    Job job = twoRanks();
    List<CollectiveRecord> records = allReduces(3, i -> CollectiveState.STARTED);
    job.records(0, "s0", batch(records), new TemplateTable(), 1);
    assertThat(job.prepareEvidence()).as("rank 1 sent no records: no window").isEqualTo(1);
    CollectiveRecord completed = records.get(2).toBuilder().setState(CollectiveState.COMPLETED).build();
    job.records(0, "s0", batch(List.of(completed)), new TemplateTable(), 2);

    List<CollectiveRecord> seen = job.evidence(Map.of(), 0, STALL, "not asked").ranks().get(0).records();
    assertThat(seen).containsExactly(records.get(0), records.get(1), completed);
    List<CollectiveRecord> again = job.evidence(Map.of(), 0, STALL, "not asked").ranks().get(0).records();
    assertThat(again.get(0)).as("built once").isSameAs(seen.get(0));
    assertThat(again.get(2)).isSameAs(seen.get(2));
  }

  @Test
  void aStallIncidentClosesOnlyOnceTheGroupThatStalledAdvancesAgain() {
    Job job = twoRanks(WORLD, WORLD.toBuilder().setName("1").build());
    java.util.function.BiConsumer<Long, Long> heartbeats = (pairCompleted, seconds) -> {
      for (int r = 0; r < 2; r++) {
        job.heartbeat(r, "s" + r, List.of(progress(5, 4), progress(4, 3).toBuilder().setProcessGroup("1")
            .setLastEnqueuedSeq(pairCompleted).setLastCompletedSeq(pairCompleted).build()), 0, 0, false,
            seconds * S, 0);
      }
    };
    heartbeats.accept(3L, 0L);
    heartbeats.accept(3L, 31L);
    assertThat(job.incident().openIfDue(31 * S, 0, STALL, HEARTBEAT, GRACE)).isEqualTo(Trigger.STALL);

    heartbeats.accept(4L, 32L);
    job.incident().closeIfOver(32 * S, STALL);
    assertThat(job.incident().isOpen()).as("group 1 advanced (a heartbeat sent before the hang reached it, say); "
        + "group 0, which stalled, did not").isTrue();
    for (int r = 0; r < 2; r++) {
      job.heartbeat(r, "s" + r, List.of(progress(6, 5)), 0, 0, false, 33 * S, 0);
    }
    job.incident().closeIfOver(33 * S, STALL);
    assertThat(job.incident().isOpen()).as("group 0 advanced").isFalse();
  }

  @Test
  void aReplyThatIgnoresTheAskIsCutToItsNewestRecords() {
    DumpReply.Builder big = DumpReply.newBuilder().setRequestId(3);
    for (int i = 0; i < 100; i++) {
      big.addRecords(CollectiveRecord.newBuilder().setRecordId(i));
    }
    DumpReply cut = Ranks.newest(big.build(), 32);

    assertThat(cut.getRequestId()).isEqualTo(3);
    assertThat(cut.getRecordsList()).extracting(CollectiveRecord::getRecordId).startsWith(68L).endsWith(99L)
        .hasSize(32);
    DumpReply small = DumpReply.newBuilder().addRecords(CollectiveRecord.getDefaultInstance()).build();
    assertThat(Ranks.newest(small, 32)).isSameAs(small);
  }
}
