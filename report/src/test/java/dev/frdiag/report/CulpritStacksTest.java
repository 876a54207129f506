package dev.frdiag.report;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.Culprit;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A CPU-side culprit whose Python stacks were read, in every rendering of the report. */
class CulpritStacksTest {
  private static Report withStacks() {
    Report r = ReportJsonTest.everyField();
    Culprit k = r.culprits().get(0);
    Culprit stuck = new Culprit(k.rank(), k.host(), k.pid(), k.cudaDevice(), k.lastOp(), List.of(), k.records(),
        "sleep_forever (train.py:106)", "dump_traceback", List.of(
            new Culprit.PythonThread("0x7f27775ebb80", "", true, false,
                List.of("sleep_forever (train.py:106)", "step_pipeline (train.py:195)")),
            new Culprit.PythonThread("3995", "fr-<watcher>", false, true, List.of("watcher (train.py:113)"))));
    return new Report(r.schema(), r.reportId(), r.job(), r.verdict(), r.symptom(), r.headline(), r.culpritRanks(),
        r.culpritHosts(), r.collective(), r.confidence(), r.evidence(), r.createdAt(), r.trigger(), r.timeline(),
        List.of(stuck), r.stuckCollectives(), r.rankStates(), r.recommendation(), r.scheduler(), r.groupProgress(),
        r.fabric(), r.lateness(), r.recoveredAt());
  }

  @Test
  void theTextQuotesTheStuckFrameAndKeepsEveryThreadsStack() {
    assertThat(ReportText.plain(withStacks())).contains("""
          - rank 5  host node-b  pid 4711  cuda:1  newest record: tp1#41 _all_gather_base (completed)
              stuck at sleep_forever (train.py:106), Python stack from dump_traceback
              thread 0x7f27775ebb80 (main)
                at sleep_forever (train.py:106)
                at step_pipeline (train.py:195)
              thread 3995 "fr-<watcher>" (idle)
                at watcher (train.py:113)
        """);
    assertThat(ReportText.markdown(withStacks()))
        .contains("    - stuck at sleep\\_forever (train.py:106), Python stack from dump\\_traceback\n");
  }

  @Test
  void thePageQuotesTheStuckFrameAndCollapsesTheStacks() {
    String html = ReportHtml.page(withStacks());

    assertThat(html).contains("stuck at <code>sleep_forever (train.py:106)</code>, Python stack from dump_traceback")
        .contains("<details class=\"python-stacks\"><summary>Python stacks (2 threads, from dump_traceback)")
        .contains("thread 3995 &quot;fr-&lt;watcher&gt;&quot; (idle)");
  }

  @Test
  void theJsonCarriesTheStacksAndReadsThemBack() {
    String json = ReportJson.write(withStacks());

    assertThat(json).contains("\"stuck_at\" : \"sleep_forever (train.py:106)\"")
        .contains("\"stacks_from\" : \"dump_traceback\"").contains("\"threads\" : [");
    assertThat(ReportJson.read(json)).isEqualTo(withStacks());
    assertThat(ReportJson.write(ReportJsonTest.everyField())).doesNotContain("stuck_at", "stacks_from",
        "\"threads\"");
  }
}
