package dev.frdiag.report;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Text from ranks, dumps and logs never reaches a terminal or a Markdown report with its control characters. */
class UntrustedTextTest {
  private static final String CLEAR_SCREEN = "\u001b[2J\u001b[H";
  private static final String RIGHT_TO_LEFT = "\u202e";

  private static Report reportWithHostileText() {
    return ReportJson.read("""
        {"schema": "frdiag.report/v1", "report_id": "job-000001", "job": "job", "verdict": "HANG",
         "symptom": "CPU_STALL", "headline": "rank 1 never issued all_reduce%s on pg 0%s",
         "culprit_ranks": [1], "confidence": 0.9, "created_at": "2026-01-02T03:04:05Z", "trigger": "stall",
         "culprits": [{"rank": 1, "host": "node1%s", "pid": 7, "cuda_device": 1, "last_op": "x\\nFAKE LINE",
                       "stack": ["train.py:1 `evil`"]}],
         "evidence": [{"kind": "not_issued", "ranks": [1], "detail": "op *bold* [link](http://x) %s"}],
         "timeline": [{"at": "2026-01-02T03:04:05Z", "event": "stall detected"}],
         "recommendation": "look at rank 1"}
        """.formatted(CLEAR_SCREEN.replace("\u001b", "\\u001b"), RIGHT_TO_LEFT, "\\u0007",
        "\\u009b31m"));
  }

  @Test
  void theTerminalRenderingShowsControlCharactersAsEscapesAndKeepsItsOwnLines() {
    String text = ReportText.plain(reportWithHostileText());
    assertThat(text).doesNotContain("\u001b", "\u202e", "\u0007", "\u009b", "\nFAKE LINE")
        .contains("all_reduce\\x1b[2J\\x1b[H", "\\u202e", "node1\\x07", "x\\x0aFAKE LINE", "\\x9b31m");
  }

  @Test
  void theMarkdownRenderingAlsoEscapesWhatWouldBecomeStructure() {
    String md = ReportText.markdown(reportWithHostileText());
    assertThat(md).doesNotContain("\u001b", "\u202e", "[link](")
        .contains("op \\*bold\\* \\[link\\](http://x)", "train.py:1 \\`evil\\`");
  }

  @Test
  void jsonStaysLosslessWithItsOwnEscapes() {
    String json = ReportJson.write(reportWithHostileText());
    assertThat(json).doesNotContain("\u001b").contains("\\u001B[2J");
    assertThat(ReportJson.read(json).headline()).contains(CLEAR_SCREEN);
  }

  @Test
  void aHangOnAHostNamesItForTheSchedulersExcludeListAndAProgramBugDoesNot() {
    String gpu = """
        {"schema": "frdiag.report/v1", "report_id": "", "job": "j", "verdict": "HANG", "symptom": "%s",
         "headline": "h", "culprit_ranks": [5], "culprit_hosts": ["node07"], "confidence": 0.9,
         "created_at": "2026-01-02T03:04:05Z", "trigger": "stall", "recommendation": "r"}
        """;
    Report onHost = ReportJson.read(gpu.formatted("GPU_STALL"));
    assertThat(onHost.exclude()).containsExactly("node07");
    assertThat(ReportText.plain(onHost)).contains("  exclude        srun --exclude=node07\n");
    String json = ReportJson.write(onHost);
    assertThat(json).contains("\"exclude\" : [ \"node07\" ]");
    assertThat(ReportJson.read(json)).isEqualTo(onHost);
    Report bug = ReportJson.read(gpu.formatted("MISMATCH"));
    assertThat(bug.exclude()).isEmpty();
    assertThat(ReportJson.write(bug)).doesNotContain("exclude");
  }
}
