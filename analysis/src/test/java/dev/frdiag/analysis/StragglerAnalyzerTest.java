package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The straggler analysis as a pure function over hand-built timelines. */
class StragglerAnalyzerTest {
  private static final long MS = 1_000_000;
  private static final long T0 = 1_790_000_000_000_000_000L;
  private static final long STEP = 100 * MS;

  /** Builds each rank's collectives step by step. */
  private static final class Job {
    final Map<Integer, List<CollectiveTiming>> byRank = new HashMap<>();
    final Map<Integer, Long> clock = new HashMap<>();

    /**
     * One collective of {@code members} on {@code group}: each member issues at {@code issue[i]} and its device
     * starts at {@code start[i]}; all end together once the last has started, after {@code latency}.
     */
    Job collective(String group, List<Integer> members, long seq, long[] issue, long[] start, long latency) {
      long last = 0;
      for (long s : start) {
        last = Math.max(last, s);
      }
      for (int i = 0; i < members.size(); i++) {
        int rank = members.get(i);
        long off = clock.getOrDefault(rank, 0L);
        byRank.computeIfAbsent(rank, k -> new ArrayList<>()).add(new CollectiveTiming(group, members, seq, false,
            seq * 31 + group.hashCode(), seq >= 0, "allreduce", 4 * MS, issue[i] + off, start[i] + off,
            last + latency + off));
      }
      return this;
    }

    TimelineEvidence evidence(boolean device) {
      List<RankTimeline> ranks = new ArrayList<>();
      byRank.forEach((r, c) -> ranks.add(new RankTimeline(r, "node" + r / 8, c, Overlap.UNKNOWN)));
      return new TimelineEvidence("job", ranks, "test timelines", device);
    }
  }

  /** {@code steps} world all-reduces of {@code n} ranks; {@code lateCpu}/{@code lateGpu} per rank, jitter ±0.2 ms. */
  private static Job world(int n, int steps, Map<Integer, Long> lateCpu, Map<Integer, Long> lateGpu, long seed,
      boolean seqs) {
    Random random = new Random(seed);
    Job job = new Job();
    List<Integer> members = new ArrayList<>();
    for (int r = 0; r < n; r++) {
      members.add(r);
    }
    for (int s = 1; s <= steps; s++) {
      long[] issue = new long[n];
      long[] start = new long[n];
      for (int r = 0; r < n; r++) {
        issue[r] = T0 + s * STEP + lateCpu.getOrDefault(r, 0L) + (long) (random.nextGaussian() * 0.2 * MS);
        start[r] = issue[r] + MS + lateGpu.getOrDefault(r, 0L) + (long) (random.nextGaussian() * 0.1 * MS);
      }
      job.collective("0", members, seqs ? s : -1, issue, start, 3 * MS);
    }
    return job;
  }

  /** How late rank {@code r} issues step {@code s}, in ns. */
  private interface IssueOffset {
    long ns(int s, int r);
  }

  /**
   * {@code steps} all-reduces of four ranks on group "0", each lasting {@code durationNs}: rank r issues step s at
   * its slot plus {@code offset}, and its device starts it 1 ms later.
   */
  private static Job fourRanks(int steps, long durationNs, IssueOffset offset) {
    Job job = new Job();
    List<Integer> members = List.of(0, 1, 2, 3);
    for (int s = 1; s <= steps; s++) {
      long[] issue = new long[4];
      long[] start = new long[4];
      for (int r = 0; r < 4; r++) {
        issue[r] = T0 + s * STEP + offset.ns(s, r);
        start[r] = issue[r] + MS;
      }
      job.collective("0", members, s, issue, start, durationNs);
    }
    return job;
  }

  @Test
  void namesTheRankThatIssuesEveryCollectiveLate() {
    Diagnosis d = StragglerAnalyzer.analyze(world(4, 40, Map.of(2, 20 * MS), Map.of(), 1, true).evidence(true));

    assertThat(d.verdict()).isEqualTo(Verdict.SLOW);
    assertThat(d.symptom()).isEqualTo(Symptom.STRAGGLER);
    assertThat(d.culpritRanks()).containsExactly(2);
    assertThat(d.culpritHosts()).containsExactly("node0");
    assertThat(d.confidence()).isEqualTo(0.9);
    assertThat(d.headline()).startsWith("Rank 2 arrives last at 40 of 40 collectives where the members waited, a "
        + "median 20.").endsWith("after the others: it issues them late (CPU side).");
    assertThat(d.evidence()).extracting(Evidence::kind).startsWith(Evidence.Kind.STRAGGLER,
        Evidence.Kind.STRAGGLER_SIDE, Evidence.Kind.SKEW, Evidence.Kind.JOINED);
    assertThat(d.evidence().get(3).detail()).isEqualTo("40 collectives of 4 ranks joined from test timelines: 40 by "
        + "Seq");
    Lateness l = d.lateness();
    assertThat(l.ranks()).extracting(Lateness.Rank::culprit).containsExactly(false, false, true, false);
    assertThat(l.ranks().get(2).timesLast()).isEqualTo(40);
    assertThat(l.ranks().get(2).medianLateNs()).isBetween(19 * MS, 21 * MS);
    assertThat(l.worst()).hasSize(Lateness.WORST_SHOWN).allSatisfy(c -> assertThat(c.lastRank()).isEqualTo(2));
  }

  @Test
  void aRankLateAtAFewCollectivesOfHundredsIsJitterNotAStraggler() {
    // As a healthy real gloo job showed live on a loaded machine: rank 1 the root of 13 of the window's 22
    // significant waits (a gap, far from chance), but at 13 of its 495 collectives.
    Random random = new Random(7);
    Job job = fourRanks(495, 3 * MS, (s, r) -> (long) (random.nextGaussian() * 0.2 * MS)
        + (r == 1 && s % 38 == 0 || r == s % 4 && s % 55 == 0 ? 8 * MS : 0));
    Diagnosis d = StragglerAnalyzer.analyze(job.evidence(true));

    assertThat(d.lateness().ranks().get(1).timesLast()).isGreaterThanOrEqualTo(13);
    assertThat(d.verdict()).isEqualTo(Verdict.NO_HANG);
    assertThat(d.culpritRanks()).isEmpty();
  }

  @Test
  void aRankWhoseDeviceStartsLateThoughIssuedInTimeIsLateOnTheGpuSide() {
    Diagnosis d = StragglerAnalyzer.analyze(world(8, 30, Map.of(), Map.of(5, 15 * MS), 2, true).evidence(true));

    assertThat(d.culpritRanks()).containsExactly(5);
    assertThat(d.headline()).endsWith("its device starts them late though issued on time (GPU side).");
    assertThat(d.evidence().get(1).detail()).startsWith("Rank 5 is late on the GPU side: its issue a median ");
    assertThat(d.recommendation()).startsWith("Check the GPU of rank 5");
  }

  @Test
  void aHealthyJobGetsNoCulprit() {
    Diagnosis d = StragglerAnalyzer.analyze(world(8, 200, Map.of(), Map.of(), 3, true).evidence(true));

    assertThat(d.verdict()).isEqualTo(Verdict.NO_HANG);
    assertThat(d.symptom()).isEqualTo(Symptom.NONE);
    assertThat(d.culpritRanks()).isEmpty();
    assertThat(d.confidence()).isEqualTo(0.9);
    assertThat(d.headline()).startsWith("No straggler: across 200 collectives no rank arrives late consistently");
  }

  @Test
  void occasionalSpikesSpreadOverRanksNameNone() {
    // Every tenth step some rank, a different one each time, is 10 ms late: noise, not a straggler.
    Job job = fourRanks(80, 2 * MS, (s, r) -> s % 10 == 0 && r == (s / 10) % 4 ? 10 * MS : 0);

    assertThat(StragglerAnalyzer.analyze(job.evidence(true)).culpritRanks()).isEmpty();
  }

  @Test
  void namesTwoStragglersOfOneJob() {
    Diagnosis d = StragglerAnalyzer.analyze(world(8, 40, Map.of(1, 20 * MS, 6, 20 * MS), Map.of(), 4, true)
        .evidence(true));

    assertThat(d.culpritRanks()).containsExactly(1, 6);
    assertThat(d.headline()).startsWith("Ranks 1, 6 arrive last at ");
  }

  @Test
  void aRankLateOnlyBecauseItWaitedUpstreamIsNotNamed() {
    // dp x tp of 4 ranks, as the real-PyTorch suite's job: tp [0,1] [2,3], then dp [0,2] [1,3]. Rank 2 sleeps
    // 20 ms before its tp all-reduce; rank 3, held up there, reaches dp [1,3] 20 ms after rank 1.
    Job job = new Job();
    for (int s = 1; s <= 20; s++) {
      long t = T0 + s * STEP;
      long late = 20 * MS;
      job.collective("tp0", List.of(0, 1), s, new long[] {t, t}, new long[] {t, t}, MS);
      job.collective("tp1", List.of(2, 3), s, new long[] {t + late, t}, new long[] {t + late, t}, MS);
      long tpDone01 = t + MS;
      long tpDone23 = t + late + MS;
      job.collective("dp0", List.of(0, 2), s, new long[] {tpDone01, tpDone23}, new long[] {tpDone01, tpDone23}, MS);
      job.collective("dp1", List.of(1, 3), s, new long[] {tpDone01, tpDone23}, new long[] {tpDone01, tpDone23}, MS);
    }

    Diagnosis d = StragglerAnalyzer.analyze(job.evidence(false));

    assertThat(d.culpritRanks()).containsExactly(2);
    assertThat(d.evidence().get(0).detail()).contains("at 40 collectives and held 20 more up through ranks that "
        + "waited for it first");
  }

  @Test
  void clocksSetApartAreAlignedOnTheCollectivesEndsAndNameNone() {
    Job job = world(4, 40, Map.of(), Map.of(), 5, true);
    Job shifted = new Job();
    shifted.clock.put(3, 50 * MS);
    shifted.clock.put(1, -7 * MS);
    Random random = new Random(5);
    for (int s = 1; s <= 40; s++) {
      long[] issue = new long[4];
      long[] start = new long[4];
      for (int r = 0; r < 4; r++) {
        issue[r] = T0 + s * STEP + (long) (random.nextGaussian() * 0.2 * MS);
        start[r] = issue[r] + MS;
      }
      shifted.collective("0", List.of(0, 1, 2, 3), s, issue, start, 3 * MS);
    }

    Diagnosis d = StragglerAnalyzer.analyze(shifted.evidence(true));

    assertThat(d.culpritRanks()).isEmpty();
    assertThat(d.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.CLOCK_OFFSET);
      assertThat(e.ranks()).containsExactly(1, 3);
      assertThat(e.detail()).contains("rank 1 -7.0 ms", "rank 3 +50.0 ms");
    });
    assertThat(d.lateness().ranks().get(3).clockOffsetNs()).isEqualTo(50 * MS);
    assertThat(StragglerAnalyzer.analyze(job.evidence(true)).evidence()).noneMatch(e ->
        e.kind() == Evidence.Kind.CLOCK_OFFSET);
  }

  @Test
  void withoutSeqCollectivesJoinByOrderWithinTheGroupAtLessConfidence() {
    Diagnosis d = StragglerAnalyzer.analyze(world(4, 40, Map.of(0, 20 * MS), Map.of(), 6, false).evidence(true));

    assertThat(d.culpritRanks()).containsExactly(0);
    assertThat(d.confidence()).isEqualTo(0.8);
    assertThat(d.evidence()).anySatisfy(e -> assertThat(e.detail()).isEqualTo("40 collectives of 4 ranks joined "
        + "from test timelines: 40 by order within the group"));
  }

  @Test
  void aMemberWhoseCommsIdDisagreesAtTheSameSeqIsLeftOutOfThatCollective() {
    Job job = world(4, 10, Map.of(), Map.of(), 7, true);
    List<CollectiveTiming> r3 = job.byRank.get(3);
    CollectiveTiming t = r3.get(4);
    r3.set(4, new CollectiveTiming(t.group(), t.members(), t.seq(), t.p2p(), 99, true, t.op(), t.bytes(),
        t.issuedNs(), t.startNs(), t.endNs()));

    Diagnosis d = StragglerAnalyzer.analyze(job.evidence(true));

    assertThat(d.evidence()).anySatisfy(e -> assertThat(e.detail()).endsWith("1 member left out where its Comms Id "
        + "disagreed with the others' at the same Seq"));
  }

  @Test
  void tooFewCollectivesAreInsufficientEvidence() {
    Diagnosis d = StragglerAnalyzer.analyze(world(4, 3, Map.of(2, 20 * MS), Map.of(), 8, true).evidence(true));

    assertThat(d.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(d.culpritRanks()).isEmpty();
  }

  @Test
  void busBandwidthFollowsNcclTests() {
    assertThat(CollectiveJoin.busFactor("allreduce", 8)).isEqualTo(1.75);
    assertThat(CollectiveJoin.busFactor("_allgather_base", 4)).isEqualTo(0.75);
    assertThat(CollectiveJoin.busFactor("broadcast", 4)).isEqualTo(1.0);
    // 4 MB all-reduced by 4 ranks whose last member's kernel took 3 ms: 4e6 × 1.5 / 3e6 ns = 2 GB/s.
    Diagnosis d = StragglerAnalyzer.analyze(world(4, 40, Map.of(2, 20 * MS), Map.of(), 1, true).evidence(true));
    assertThat(d.lateness().worst().get(0).busGbps()).isCloseTo(2.0, within(0.01));
  }

  @Test
  void overlapIsTheIntersectionOfEachKindsUnion() {
    // Compute [0,10) and [5,20) unite to 20 ns; communication [15,30) and [25,28) to 15 ns; both run in [15,20).
    Overlap o = Overlap.of(new long[] {0, 10, 5, 20}, new long[] {15, 30, 25, 28});

    assertThat(o).isEqualTo(new Overlap(20, 15, 5));
    assertThat(o.exposedNs()).isEqualTo(10);
    assertThat(o.hiddenShare()).isCloseTo(1 / 3.0, within(1e-9));
    assertThat(Overlap.of(new long[0], new long[0]).known()).isFalse();
  }

  @Test
  void theSameTimelinesInAnyRankOrderGiveTheSameDiagnosis() {
    TimelineEvidence e = world(8, 30, Map.of(3, 12 * MS), Map.of(), 9, true).evidence(true);
    List<RankTimeline> reversed = new ArrayList<>(e.ranks());
    java.util.Collections.reverse(reversed);

    assertThat(StragglerAnalyzer.analyze(new TimelineEvidence("job", reversed, e.source(), true)))
        .isEqualTo(StragglerAnalyzer.analyze(e));
  }
}
