package dev.frdiag.cli.analyze;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.Evidence;
import dev.frdiag.cli.ExitCode;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import dev.frdiag.report.Report;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One {@code analyze} over some ranks' dumps and another rank's log: each rank is read from its best evidence and
 * the two meet in one matcher, since a log names a group by the name its dump's pg_config uses (the PG GUID).
 */
class MixedSourcesTest {
  /**
   * Rank 13 of the real GPU-error sample, as PyTorch 2.7+ prints it when its watchdog fires: the timeout on its
   * first unfinished collective of group 41 and that group's status, with the counters its own dump holds
   * (pg_status of group 41: last enqueued 42826, last completed 42817; oldest entry 42818 _reduce_scatter_base).
   */
  private static final String RANK_13_LOG = """
      [rank13]:[E1015 06:58:05.880271823 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation \
      timeout: WorkNCCL(SeqNum=42818, OpType=_REDUCE_SCATTER_BASE, NumelIn=8192, NumelOut=4096, \
      Timeout(ms)=600000) ran for 600031 milliseconds before timing out.
      [rank13]:[E1015 06:58:05.880538748 ProcessGroupNCCL.cpp:2268] [PG ID 5 PG GUID 41(TENSOR_MODEL_PARALLEL_GROUP) \
      Rank 1]  failure detected by watchdog at work sequence id: 42818 PG status: last enqueued work: 42826, last \
      completed work: 42817
      """;

  @TempDir
  Path dir;

  @Test
  void aRankWithoutADumpIsReadFromItsLogInTheGroupsTheDumpsDescribe() throws IOException {
    Path dumps = withoutRank13();
    Path log = Files.writeString(dir.resolve("rank13-train.log"), RANK_13_LOG);

    Analyze.Result r = Analyze.json(dumps, log);

    assertThat(r.code()).as(r.err()).isEqualTo(ExitCode.HANG);
    Report report = r.report();
    // The answer all sixteen dumps give: rank 13's log says it finished what ranks 12 and 14 never did.
    assertThat(report.verdict()).isEqualTo(Verdict.HANG);
    assertThat(report.symptom()).isEqualTo(Symptom.GPU_STALL);
    assertThat(report.culpritRanks()).containsExactly(12, 14);
    assertThat(report.evidence()).anySatisfy(e -> {
      assertThat(e.kind()).isEqualTo(Evidence.Kind.SOURCES);
      assertThat(e.ranks()).containsExactly(13);
      assertThat(e.detail()).isEqualTo("Ranks 0-12, 14, 15: Flight Recorder records; rank 13: only the lines it "
          + "printed (what a process said, not what it recorded)");
    });
  }

  @Test
  void withoutTheLogTheMissingDumpLeavesAGap() throws IOException {
    Analyze.Result r = Analyze.json(withoutRank13());

    Report report = r.report();
    // Rank 12 shares group 41 only with rank 13, whose evidence is gone: only rank 14's lag is still seen.
    assertThat(report.culpritRanks()).containsExactly(14);
    assertThat(report.evidence()).noneSatisfy(e -> assertThat(e.kind()).isEqualTo(Evidence.Kind.SOURCES));
  }

  /** The real GPU-error sample without rank 13's dump. */
  private Path withoutRank13() throws IOException {
    Path dumps = Files.createDirectories(dir.resolve("dumps"));
    try (Stream<Path> files = Files.list(Analyze.sample("nvrx_gpu_error_1st"))) {
      for (Path f : files.toList()) {
        if (f.getFileName().toString().startsWith("_dump_") && !f.getFileName().toString().equals("_dump_13")) {
          Files.copy(f, dumps.resolve(f.getFileName()));
        }
      }
    }
    return dumps;
  }
}
