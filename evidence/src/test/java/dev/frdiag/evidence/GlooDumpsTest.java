package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.assertj.core.api.Assertions.tuple;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Real PyTorch 2.13.0+cpu gloo Flight Recorder dumps of real hangs (resources/pytorch-2.13-gloo/README.md), read
 * the way {@code fr-diagnose analyze} reads them: {@link EvidenceReader}, then {@link HangAnalyzer}. Each
 * scenario's expected reading is what its fault makes true, from what the dumps can show (the README says why).
 */
class GlooDumpsTest {
  private static final Path DUMPS = Path.of("src", "test", "resources", "pytorch-2.13-gloo");

  /**
   * One scenario's right reading; {@code collective} is "group#seq op", empty for none. Its confidence from the JSON
   * dumps, and from the pickle ones, whose symbolized stacks make their write times date them less (DIAGNOSIS.md
   * §11, "Time as evidence").
   */
  record Expected(String scenario, Verdict verdict, Symptom symptom, List<Integer> culprits, String collective,
      double jsonConfidence, double pickleConfidence, Evidence.Kind mustSay) {
    double confidence(String format) {
      return format.equals("pickle") ? pickleConfidence : jsonConfidence;
    }
  }

  private static final List<Expected> EXPECTED = List.of(
      new Expected("stall_dp_rank2_w4", Verdict.HANG, Symptom.CPU_STALL, List.of(2), "3#6 all_reduce", 0.7, 0.4,
          Evidence.Kind.SNAPSHOT_AGE),
      new Expected("stall_tp_rank1_w4", Verdict.HANG, Symptom.CPU_STALL, List.of(1), "1#11 all_reduce", 0.7, 0.4,
          Evidence.Kind.SNAPSHOT_AGE),
      new Expected("stall_world_rank3_w4", Verdict.HANG, Symptom.CPU_STALL, List.of(3), "0#8 all_reduce", 0.7,
          0.4, Evidence.Kind.SNAPSHOT_AGE),
      new Expected("stall2_dp_ranks2_5_w8", Verdict.HANG, Symptom.CPU_STALL, List.of(2, 5), "6#6 all_reduce", 0.7,
          0.4, Evidence.Kind.SNAPSHOT_AGE),
      new Expected("mismatch_dp_rank1_w4", Verdict.HANG, Symptom.MISMATCH, List.of(1), "4#6 all_gather", 0.95,
          0.95, Evidence.Kind.SIGNATURE_MISMATCH),
      new Expected("pp_stall_rank2_w4", Verdict.HANG, Symptom.CPU_STALL, List.of(0, 2), "1#6 all_reduce", 0.5, 0.4,
          Evidence.Kind.UNRECORDED_OPS),
      new Expected("timeout_world_rank3_w4", Verdict.HANG, Symptom.CPU_STALL, List.of(3), "0#6 all_reduce", 0.9,
          0.9, Evidence.Kind.NOT_ISSUED),
      new Expected("kill_rank1_w4", Verdict.HANG, Symptom.DEAD_RANK, List.of(1), "0#6 all_reduce", 0.6, 0.6,
          Evidence.Kind.RANK_LOST),
      new Expected("healthy_dptp4", Verdict.NO_HANG, Symptom.NONE, List.of(), "", 0.9, 0.9, null),
      new Expected("healthy_pipeline_w4", Verdict.NO_HANG, Symptom.NONE, List.of(), "", 0.5, 0.5,
          Evidence.Kind.UNRECORDED_OPS));

  static Stream<Arguments> scenarios() {
    return EXPECTED.stream().flatMap(e -> Stream.of(Arguments.of(e, "pickle"), Arguments.of(e, "json")));
  }

  @ParameterizedTest(name = "{0} from {1}")
  @MethodSource("scenarios")
  void readsTheRealDumpsOfEachScenarioRight(Expected e, String format) throws Exception {
    Diagnosis d = analyze(e.scenario(), format);

    assertThat(d.verdict()).as(d.headline()).isEqualTo(e.verdict());
    assertThat(d.symptom()).as(d.headline()).isEqualTo(e.symptom());
    assertThat(d.culpritRanks()).as(d.headline()).isEqualTo(e.culprits());
    assertThat(d.collective() == null ? "" : d.collective().processGroup() + "#" + d.collective().seq() + " "
        + d.collective().op()).isEqualTo(e.collective());
    assertThat(d.confidence()).as(d.evidence().toString()).isCloseTo(e.confidence(format), within(1e-9));
    if (e.mustSay() != null) {
      assertThat(d.evidence()).extracting(Evidence::kind).contains(e.mustSay());
    }
  }

  @ParameterizedTest(name = "{0} from {1}")
  @MethodSource("scenarios")
  void neverCallsAHungJobHealthyWithConfidence(Expected e, String format) throws Exception {
    Diagnosis d = analyze(e.scenario(), format);

    if (e.verdict() != Verdict.NO_HANG) {
      assertThat(d.verdict() == Verdict.NO_HANG && d.confidence() >= 0.9).as(d.headline()).isFalse();
    }
  }

  @ParameterizedTest(name = "from {0}")
  @ValueSource(strings = {"pickle", "json"})
  void readsGlooPgStatusInCollectiveSeqsNotOpIds(String format) throws Exception {
    // Rank 1 of the pipeline: pg_status '0' (default group) is 15/15 in op_ids, whose newest collective is #5 at
    // op_id 15 (two unrecorded send/recv per step); '1' (its stage group) is 6/5, where op_id = collective seq.
    FlightRecorderDump dump = DumpReader.create()
        .read(DUMPS.resolve("pp_stall_rank2_w4").resolve(format).resolve("trace_rank_1"));

    assertThat(dump.progress()).extracting(ProcessGroupProgress::getProcessGroup,
        ProcessGroupProgress::getLastEnqueuedSeq, ProcessGroupProgress::getLastCompletedSeq)
        .containsExactlyInAnyOrder(tuple("0", 5L, 5L), tuple("1", 6L, 5L));
  }

  @ParameterizedTest(name = "{0} from {1}")
  @MethodSource("scenarios")
  void readsTheSameWhenEachRankListsOnlyItselfAsALiveJobsAgentsSendThem(Expected e, String format)
      throws Exception {
    // Streamed live, each rank's dump reaches the daemon through its node's agent, which vouches for no member of a
    // gloo group but the rank itself (a job of several nodes sees no more): the analysis completes the groups.
    JobEvidence folder = evidence(e.scenario(), format);
    List<RankEvidence> partial = folder.ranks().stream().map(r -> new RankEvidence(r.rank(), r.identity(),
        r.liveness(), r.answered(), r.missingReason(), r.groups().stream().map(g -> g.getMembersFromRecords()
            ? g.toBuilder().clearRanks().addRanks(r.rank()).setGlobalRankStart(r.rank()).setGlobalRankStride(1)
                .build() : g).toList(),
        r.records(), r.progress(), r.events(), r.frames(), r.source(), r.windowCurrentAtNs(), r.stacks()))
        .toList();
    JobEvidence streamed = new JobEvidence(folder.jobId(), folder.worldSize(), partial, folder.observedAtNs(),
        folder.stallThreshold(), folder.context());

    Diagnosis live = HangAnalyzer.analyze(streamed);

    assertThat(partial).anySatisfy(r -> assertThat(r.groups()).anySatisfy(
        g -> assertThat(g.getMembersFromRecords() && g.getRanksCount() == 1).isTrue()));
    assertThat(live.verdict()).as(live.headline()).isEqualTo(e.verdict());
    assertThat(live.symptom()).as(live.headline()).isEqualTo(e.symptom());
    assertThat(live.culpritRanks()).as(live.headline()).isEqualTo(e.culprits());
  }

  /**
   * With the stacks each rank's worker server answered during the same run ({@code stacks/}, dump_traceback), each
   * scenario keeps its right reading, and the pipeline's rank 0, blocked inside its send to rank 2, which its ring
   * cannot show, is told from rank 2, which sleeps before its recv.
   */
  static Stream<Arguments> withStacks() {
    return EXPECTED.stream().filter(e -> Files.isDirectory(DUMPS.resolve(e.scenario()).resolve("stacks")))
        .map(e -> e.scenario().equals("pp_stall_rank2_w4") ? new Expected(e.scenario(), Verdict.HANG,
            Symptom.CPU_STALL, List.of(2), "2#6 all_reduce", 0.7, 0.4, Evidence.Kind.PYTHON_STACK) : e)
        .flatMap(e -> Stream.of(Arguments.of(e, "pickle"), Arguments.of(e, "json")));
  }

  @ParameterizedTest(name = "{0} from {1} with stacks")
  @MethodSource("withStacks")
  void readsEachScenarioRightWithTheRanksStacks(Expected e, String format) throws Exception {
    Diagnosis d = analyze(e.scenario(), format, "stacks");

    assertThat(d.verdict()).as(d.headline()).isEqualTo(e.verdict());
    assertThat(d.symptom()).as(d.headline()).isEqualTo(e.symptom());
    assertThat(d.culpritRanks()).as(d.headline()).isEqualTo(e.culprits());
    assertThat(d.collective().processGroup() + "#" + d.collective().seq() + " " + d.collective().op())
        .isEqualTo(e.collective());
    assertThat(d.confidence()).as(d.evidence().toString()).isCloseTo(e.confidence(format), within(1e-9));
    assertThat(d.evidence()).extracting(Evidence::kind).contains(e.mustSay())
        .doesNotContain(Evidence.Kind.UNRECORDED_OPS);
    if (e.symptom() == Symptom.CPU_STALL) {
      // Every culprit's stack was read: each is quoted where it is stuck.
      assertThat(d.culprits()).allSatisfy(c -> assertThat(c.stuckAt()).startsWith("sleep_forever (train.py:"));
    }
  }

  @Test
  void pipelineStacksTellTheSenderBlockedOnTheStalledReceiverFromTheStalledRank() throws Exception {
    Diagnosis d = analyze("pp_stall_rank2_w4", "json", "stacks");

    assertThat(d.evidence()).filteredOn(e -> e.kind() == Evidence.Kind.PYTHON_STACK).extracting(Evidence::detail)
        .containsExactly("Rank 2 is at sleep_forever (train.py:106), outside torch.distributed (Python stack from "
            + "dump_traceback_rank_2.txt): stuck there, not waiting for a peer",
            "Rank 0 is inside send (distributed_c10d.py:2753): waiting for a peer, not the cause (Python stack "
                + "from dump_traceback_rank_0.txt)");
    assertThat(d.culprits().get(0).stuckAt()).isEqualTo("sleep_forever (train.py:106)");
    assertThat(d.culprits().get(0).threads()).singleElement().satisfies(t -> {
      assertThat(t.id()).isEqualTo("0x7f27775ebb80");
      assertThat(t.main()).isTrue();
      assertThat(t.frames()).hasSize(5);
    });
  }

  @ParameterizedTest(name = "from {0}")
  @ValueSource(strings = {"pickle", "json"})
  void pySpyStacksGiveTheSameReadingAsFaulthandlers(String format) throws Exception {
    Diagnosis d = analyze("stall_tp_rank1_w4", format, "pyspy");

    assertThat(d.culpritRanks()).isEqualTo(List.of(1));
    assertThat(d.culprits().get(0).stuckAt()).isEqualTo("sleep_forever (train.py:106)");
    assertThat(d.culprits().get(0).threads()).extracting(t -> t.id() + " " + t.name() + " " + t.idle())
        .containsExactly("19516 MainThread true");
  }

  private static Diagnosis analyze(String scenario, String format, String... beside) throws Exception {
    return HangAnalyzer.analyze(evidence(scenario, format, beside));
  }

  private static JobEvidence evidence(String scenario, String format, String... beside) throws Exception {
    List<Path> paths = new ArrayList<>(List.of(DUMPS.resolve(scenario).resolve(format)));
    for (String b : beside) {
      paths.add(DUMPS.resolve(scenario).resolve(b));
    }
    EvidenceReader.Gathered g = EvidenceReader.builder().build().read(paths, ReadProgress.SILENT);
    return g.evidence().orElseThrow();
  }
}
