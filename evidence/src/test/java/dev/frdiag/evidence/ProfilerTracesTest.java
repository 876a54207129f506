package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.RankTimeline;
import dev.frdiag.analysis.TimelineEvidence;
import dev.frdiag.readers.kineto.KinetoTrace;
import dev.frdiag.readers.kineto.KinetoTraceReader;
import dev.frdiag.readers.kineto.RankTrace;
import dev.frdiag.readers.kineto.TraceCollective;
import dev.frdiag.readers.kineto.TraceGroup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real profiler traces nobody here wrote (Holistic Trace Analysis' test data, resources/kineto/hta/NOTICE.md) read
 * as evidence: by the trace reader, and by {@link EvidenceReader} as {@code fr-diagnose analyze} reads them.
 */
class ProfilerTracesTest {
  @TempDir
  Path dir;

  static Path sample(String name) throws Exception {
    return Path.of(ProfilerTracesTest.class.getResource("/kineto/" + name).toURI());
  }

  private static RankTrace only(KinetoTrace t) {
    assertThat(t.ranks()).hasSize(1);
    return t.ranks().get(0);
  }

  @Test
  void readsCollectivesFromRecordParamCommsWithTheirLinkedKernelsInNanoseconds() throws Exception {
    RankTrace r = only(KinetoTraceReader.create().read(sample("hta/nccl_data.json.gz")));

    assertThat(r.rank()).isZero();
    assertThat(r.rankFrom()).isEqualTo("distributedInfo");
    assertThat(r.worldSize()).isEqualTo(2);
    assertThat(r.backend()).isEqualTo("nccl");
    // 15 allreduce and 6 broadcast; the 6 "wait" record_param_comms are no collectives.
    Map<String, Long> ops = r.collectives().stream().collect(Collectors.groupingBy(TraceCollective::op,
        Collectors.counting()));
    assertThat(ops).containsExactlyInAnyOrderEntriesOf(Map.of("allreduce", 15L, "broadcast", 6L));
    assertThat(r.collectives()).allSatisfy(c -> {
      assertThat(c.found()).isEqualTo(TraceCollective.Found.RECORD_PARAM_COMMS);
      assertThat(c.group()).isEqualTo(new TraceGroup("0", "default_pg", List.of(0, 1)));
      assertThat(c.seq()).isEqualTo(-1);
      assertThat(c.hasCommsId()).isFalse();
      assertThat(c.issuedNs()).isPositive();
      assertThat(c.startNs()).isGreaterThan(c.issuedNs());
      assertThat(c.endNs()).isGreaterThan(c.startNs());
    });
    // The first broadcast: record_param_comms ts 4458676423264.031, its kernel ts 4458676423385.774 dur 30.975,
    // base 1711964646000000000: kept to the nanosecond.
    TraceCollective first = r.collectives().get(0);
    assertThat(first.op()).isEqualTo("broadcast");
    assertThat(first.issuedNs()).isEqualTo(1711964646000000000L + 4458676423264031L);
    assertThat(first.startNs()).isEqualTo(1711964646000000000L + 4458676423385774L);
    assertThat(first.endNs()).isEqualTo(first.startNs() + 30975);
    assertThat(first.elements()).isEqualTo(53120);
    assertThat(first.dtype()).isEqualTo("Float");
    // Every kernel counted once: 21 communication kernels, the rest compute.
    assertThat(r.communication()).hasSize(2 * 21);
    assertThat(r.compute().length / 2).isEqualTo(2679);
  }

  @Test
  void readsOldTracesInWholeEpochMicrosecondsWithKernelsToldByName() throws Exception {
    RankTrace r0 = only(KinetoTraceReader.create().read(sample("hta/sampled_rank-0.json.gz")));
    RankTrace r1 = only(KinetoTraceReader.create().read(sample("hta/sampled_rank-1.json.gz")));

    assertThat(r0.rank()).isZero();
    assertThat(r1.rank()).isEqualTo(1);
    assertThat(r1.worldSize()).isEqualTo(128);
    // No record_param_comms carries keys and no kernel links to one: the ten SendRecv kernels by name alone.
    assertThat(r1.collectives()).hasSize(10).allSatisfy(c -> {
      assertThat(c.found()).isEqualTo(TraceCollective.Found.KERNEL);
      assertThat(c.op()).isEqualTo("SendRecv");
      assertThat(c.group().named()).isFalse();
      assertThat(c.issuedNs()).isZero();
    });
    // ts 1682725898129911 µs, dur 57924.0.
    assertThat(r1.collectives().get(0).startNs()).isEqualTo(1682725898129911000L);
    assertThat(r1.collectives().get(0).endNs()).isEqualTo(1682725898129911000L + 57924000L);
  }

  @Test
  void analyzeTellsTracesByContentAndReadsAFolderOfThemIntoTimelines() throws Exception {
    Path traces = dir.resolve("traces");
    Files.createDirectories(traces);
    // Renamed so that nothing but the content tells what they are.
    Files.copy(sample("hta/sampled_rank-0.json.gz"), traces.resolve("a"));
    Files.copy(sample("hta/sampled_rank-1.json.gz"), traces.resolve("b"));
    List<String> problems = new ArrayList<>();

    EvidenceReader.Gathered g = EvidenceReader.builder().build().read(List.of(traces), new Recording(problems));

    assertThat(InputKind.of(traces.resolve("a"))).isEqualTo(InputKind.PROFILER_TRACE);
    assertThat(g.evidence()).isEmpty();
    assertThat(g.traceFiles()).isEqualTo(2);
    TimelineEvidence t = g.timelines().orElseThrow();
    assertThat(t.ranks()).extracting(RankTimeline::rank).containsExactly(0, 1);
    assertThat(t.ranks()).allSatisfy(r -> {
      assertThat(r.collectives()).hasSize(10);
      // Their kernels' intervals are reduced to how much communication compute hid.
      assertThat(r.overlap().known()).isTrue();
      assertThat(r.overlap().communicationNs()).isPositive();
    });
    assertThat(t.deviceStarts()).isTrue();
    assertThat(problems).isEmpty();
  }

  @Test
  void aTraceThatCannotBeReadIsReportedAndTheOthersAreRead() throws Exception {
    Path traces = dir.resolve("traces");
    Files.createDirectories(traces);
    Files.copy(sample("hta/sampled_rank-0.json.gz"), traces.resolve("rank0.json.gz"));
    Files.writeString(traces.resolve("host_42.pt.trace.json"), "{\"traceEvents\": []}");
    List<String> problems = new ArrayList<>();

    EvidenceReader.Gathered g = EvidenceReader.builder().build().read(List.of(traces), new Recording(problems));

    assertThat(g.timelines().orElseThrow().ranks()).extracting(RankTimeline::rank).containsExactly(0);
    assertThat(problems).containsExactly("whose trace: distributedInfo names no rank and the file name holds none "
        + "(name it rank<N>…, e.g. rank3.pt.trace.json) (" + traces.resolve("host_42.pt.trace.json") + ")");
  }

  /** Keeps what reading says. */
  record Recording(List<String> problems) implements ReadProgress {
    @Override
    public Batch batch(String label, int total) {
      return () -> {};
    }

    @Override
    public void problem(String message) {
      problems.add(message);
    }

    @Override
    public void note(String note) {}
  }
}
