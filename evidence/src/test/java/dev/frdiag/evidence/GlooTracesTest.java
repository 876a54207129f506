package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.CollectiveTiming;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.RankTimeline;
import dev.frdiag.analysis.StragglerAnalyzer;
import dev.frdiag.analysis.TimelineEvidence;
import dev.frdiag.analysis.TraceHistory;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Real torch 2.13 CPU traces of the real-PyTorch suite's gloo jobs (resources/pytorch-2.13-traces/README.md): one
 * with rank 2 sleeping 30 ms before its collectives at every step, one healthy, and one that hung (with its dumps).
 */
class GlooTracesTest {
  private static TimelineEvidence read(String job) throws Exception {
    Path dir = Path.of(GlooTracesTest.class.getResource("/pytorch-2.13-traces/" + job).toURI());
    EvidenceReader.Gathered g = EvidenceReader.builder().build().read(List.of(dir), ReadProgress.SILENT);
    assertThat(g.traceFiles()).isEqualTo(4);
    return g.timelines().orElseThrow();
  }

  @Test
  void readsEachGlooCollectiveOnTheGroupWhoseWorkerThreadsRanIt() throws Exception {
    TimelineEvidence t = read("healthy_w4");

    assertThat(t.ranks()).extracting(RankTimeline::rank).containsExactly(0, 1, 2, 3);
    assertThat(t.deviceStarts()).isFalse();
    // 12 profiled steps of tp all_reduce and all_gather, dp all_reduce, world all_reduce: by their gloo pools.
    RankTimeline rank0 = t.ranks().get(0);
    Map<String, Long> byGroup = rank0.collectives().stream().collect(Collectors.groupingBy(
        c -> c.group() + " " + c.members() + " " + c.op(), Collectors.counting()));
    assertThat(byGroup).containsExactlyInAnyOrderEntriesOf(Map.of("0 [0, 1, 2, 3] all_reduce", 12L,
        "1 [0, 1] all_reduce", 12L, "1 [0, 1] all_gather", 12L, "3 [0, 2] all_reduce", 12L));
    RankTimeline rank3 = t.ranks().get(3);
    assertThat(rank3.collectives()).extracting(CollectiveTiming::group).containsOnly("0", "2", "4");
    // Each issued on the main thread (c10d::allreduce_) before its work began on the pool, and ended after.
    assertThat(rank0.collectives()).allSatisfy(c -> {
      assertThat(c.issuedNs()).isPositive().isLessThanOrEqualTo(c.startNs());
      assertThat(c.endNs()).isGreaterThan(c.startNs());
    });
  }

  @Test
  void namesTheRankThatSleepsBeforeItsCollectivesEveryStep() throws Exception {
    Diagnosis d = StragglerAnalyzer.analyze(read("slow_rank2_w4"));

    assertThat(d.verdict()).isEqualTo(Verdict.SLOW);
    assertThat(d.symptom()).isEqualTo(Symptom.STRAGGLER);
    assertThat(d.culpritRanks()).containsExactly(2);
    assertThat(d.headline()).endsWith("it issues them late (CPU side).");
    assertThat(d.evidence().get(0).kind()).isEqualTo(Evidence.Kind.STRAGGLER);
    // Rank 3 reaches dp '4' late at every step, but only because it waited for rank 2 in tp '2' first.
    assertThat(d.evidence().get(0).detail()).contains("more up through ranks that waited for it first");
    assertThat(d.lateness().ranks().get(2).culprit()).isTrue();
  }

  @Test
  void aHealthyRunNamesNone() throws Exception {
    Diagnosis d = StragglerAnalyzer.analyze(read("healthy_w4"));

    assertThat(d.verdict()).isEqualTo(Verdict.NO_HANG);
    assertThat(d.culpritRanks()).isEmpty();
    assertThat(d.evidence().get(0).kind()).isEqualTo(Evidence.Kind.SKEW);
  }

  @Test
  void aHangsStuckCollectiveIsShownWithItsHistoryInTheSameJobsTraces() throws Exception {
    Path job = Path.of(GlooTracesTest.class.getResource("/pytorch-2.13-traces/stall_dp_rank2_w4").toURI());
    EvidenceReader.Gathered g = EvidenceReader.builder().build().read(List.of(job.resolve("json"),
        job.resolve("traces")), ReadProgress.SILENT);

    Diagnosis hang = HangAnalyzer.analyze(g.evidence().orElseThrow());
    Diagnosis d = TraceHistory.attach(hang, g.timelines().orElseThrow());

    assertThat(d.verdict() + " " + d.symptom() + " " + d.culpritRanks()).isEqualTo("HANG CPU_STALL [2]");
    assertThat(d.collective().label()).isEqualTo("3#6 all_reduce");
    assertThat(d.evidence()).filteredOn(e -> e.kind() == Evidence.Kind.TRACE_HISTORY).singleElement()
        .satisfies(e -> {
          assertThat(e.ranks()).containsExactly(0, 2);
          assertThat(e.detail()).startsWith("The profiler traces of ranks 0, 2 show 2 collectives of group 3 "
              + "(undefined) over ").contains("before the stuck op was first issued; they carry no Seq");
        });
    // The group's history drawn on the hang's page.
    assertThat(d.lateness().ranks()).extracting(l -> l.rank()).containsExactly(0, 2);
    assertThat(hang.evidence()).noneMatch(e -> e.kind() == Evidence.Kind.TRACE_HISTORY);
  }
}
