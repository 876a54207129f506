package dev.frdiag.report;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.CollectiveRef;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.GroupProgress;
import dev.frdiag.analysis.StuckCollective;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class ReportHtmlTest {
  private static final Pattern DRAWN_ROW = Pattern.compile("<tr class=\"row[^\"]*\"");

  /** A 4,096-rank job on 512 hosts of 8 ranks: every rank waits in seq 100 except rank 1234, which never issued. */
  static Report largeJob(String op) {
    CollectiveRef ref = new CollectiveRef("0", "default_pg", 100, false, op, "");
    List<GroupProgress.Row> rows = new ArrayList<>();
    for (int host = 0; host < 512; host++) {
      List<Integer> waiting = new ArrayList<>();
      for (int rank = host * 8; rank < host * 8 + 8; rank++) {
        if (rank != 1234) {
          waiting.add(rank);
        }
      }
      String name = String.format("node%03d", host);
      rows.add(new GroupProgress.Row(name, waiting, "CCCSNN", false, false));
      if (host == 154) {
        rows.add(new GroupProgress.Row(name, List.of(1234), "CCCNNN", false, true));
      }
    }
    Diagnosis d = new Diagnosis(Verdict.HANG, Symptom.CPU_STALL, List.of(1234), List.of("node154"), ref, 0.95,
        List.of(new Evidence(Evidence.Kind.NOT_ISSUED, List.of(1234), "Rank 1234 never issued 0#100 " + op)),
        List.of(), List.of(), List.of(), "Rank 1234 (node154) never issued " + op + ": CPU-side stall.",
        "Inspect the culprit's Python stack.", 0)
        .withProgress(List.of(new GroupProgress(ref, true, 97, true, rows)));
    return Report.of("big-000001", "big", Report.Trigger.STALL, Instant.parse("2026-11-25T10:00:00Z"), d, List.of(),
        Map.of());
  }

  @Test
  void aGridOf4096RanksDrawsThreeRowsWithTheCulpritsOwnAndOpensIntoItsHosts() {
    String html = ReportHtml.page(largeJob("all_reduce"));

    Matcher m = DRAWN_ROW.matcher(html);
    int drawn = 0;
    while (m.find()) {
      drawn++;
    }
    assertThat(drawn).as("hosts before the culprit, the culprit, hosts after it").isEqualTo(3);
    assertThat(html).contains("data-culprit=\"true\"").contains("node000 … node154").contains("node155 … node511");
    assertThat(html.split("data-part-of=\"g0r0\"", -1)).hasSize(155 + 1);
    assertThat(html).contains("data-ranks=\"1239\"");
  }

  @Test
  void theVerdictComesFirstAndTheStuckSeqIsMarked() {
    String html = ReportHtml.page(largeJob("all_reduce"));
    assertThat(html.indexOf("id=\"headline\"")).isLessThan(html.indexOf("class=\"grid\""));
    assertThat(html).contains("<th class=\"seq stuck\">100</th>");
  }

  @Test
  void textFromRanksIsEscapedNotMarkup() {
    String html = ReportHtml.page(largeJob("<script>alert(1)</script>\u001b[2J"));
    assertThat(html).doesNotContain("<script>alert(1)").contains("&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2J");
    // The page's own script is the only one, and it fetches nothing.
    assertThat(html.split("<script>", -1)).hasSize(2);
    assertThat(html).doesNotContain("http://").doesNotContain("https://");
  }

  @Test
  void aReportWithoutAPictureStillReadsWell() {
    Report r = ReportJsonTest.everyField();
    Report none = new Report(r.schema(), r.reportId(), r.job(), r.verdict(), r.symptom(), r.headline(),
        r.culpritRanks(), r.culpritHosts(), r.collective(), r.confidence(), r.evidence(), r.createdAt(), r.trigger(),
        r.timeline(), r.culprits(), r.stuckCollectives(), r.rankStates(), r.recommendation(), r.scheduler(),
        List.of(), null, null, null);
    String html = ReportHtml.page(none);
    assertThat(html).doesNotContain("class=\"grid\"").contains("id=\"cascade\"").contains("Inspect the culprit");
  }

  /**
   * Who waits for whom: a chain that ends at a rank waiting in no stuck collective ends at a red root; a chain that
   * closes on itself (rank 0 in an all_reduce its peers never issued, each peer waiting for rank 0 elsewhere) is a
   * red cycle, and the picture names the culprit's node.
   */
  @Test
  void theWaitGraphEndsAtItsRootOrClosesInARedCycle() {
    StuckCollective world = stuckIn("0", 6, List.of(1, 3), List.of(0, 2));
    StuckCollective dp = stuckIn("3", 6, List.of(0), List.of(2));
    String chain = WaitPictureHtml.of(List.of(world, dp), List.of(2));
    assertThat(chain).contains("<g class=\"node root culprit\">").contains(">rank 2<")
        .doesNotContain("node cycle").contains(">0#6 all_reduce<", ">3#6 all_reduce<");
    assertThat(count(chain, "class=\"link\"")).as("0#6 to 3#6 (rank 0) and to rank 2; 3#6 to rank 2").isEqualTo(3);

    StuckCollective extra = stuckIn("0", 6, List.of(0), List.of(1, 2, 3));
    StuckCollective tp = stuckIn("1", 11, List.of(1), List.of(0));
    StuckCollective dp3 = stuckIn("3", 6, List.of(2), List.of(0));
    StuckCollective dp4 = stuckIn("4", 6, List.of(3), List.of(1));
    String cycle = WaitPictureHtml.of(List.of(extra, tp, dp3, dp4), List.of(0));
    assertThat(cycle).doesNotContain("node root").contains("<g class=\"node cycle culprit\">")
        .contains("collectives whose ranks wait for each other in a cycle");
    assertThat(count(cycle, "class=\"link cycle\"")).isEqualTo(6);

    assertThat(WaitPictureHtml.of(List.of(), List.of())).as("nothing stuck, nothing drawn").isEmpty();
  }

  /** The wait-for picture alone. */
  private static final class WaitPictureHtml {
    static String of(List<StuckCollective> stuck, List<Integer> culprits) {
      StringBuilder b = new StringBuilder();
      WaitPicture.draw(b, stuck, culprits);
      return b.toString();
    }
  }

  private static StuckCollective stuckIn(String group, long seq, List<Integer> waiting, List<Integer> notIssued) {
    return new StuckCollective(new CollectiveRef(group, "", seq, false, "all_reduce", ""), false, List.of(), waiting,
        List.of(), notIssued, List.of(), List.of());
  }

  private static int count(String text, String part) {
    return text.split(Pattern.quote(part), -1).length - 1;
  }

  @Test
  void collapsingNeverMergesACulpritOrALostRank() {
    List<GroupProgress.Row> rows = List.of(
        new GroupProgress.Row("a", List.of(0), "CS", false, false),
        new GroupProgress.Row("b", List.of(1), "CS", false, false),
        new GroupProgress.Row("b", List.of(2), "CS", false, true),
        new GroupProgress.Row("c", List.of(3), "CS", true, false),
        new GroupProgress.Row("d", List.of(4), "CS", false, false));
    assertThat(ReportHtml.collapse(rows)).extracting(List::size).containsExactly(2, 1, 1, 1);
  }
  @Test
  void aNetworkVerdictPicturesItsHostsWithTheFailingPortMarkedAndItsFindingsListed() {
    String html = ReportHtml.page(ReportJsonTest.everyField());

    assertThat(html.indexOf("id=\"headline\"")).isLessThan(html.indexOf("id=\"fabric\""));
    assertThat(html).contains("<g class=\"port failing\">").contains("<g class=\"gpu culprit\" data-culprit=\"true\">")
        .contains("<g class=\"host failing culprit\">")
        .contains("peer 10.0.0.7&lt;5432&gt;")
        .contains("3 more hosts with no finding not drawn")
        .contains("infiniband/mlx5_1/ports/1/link_downed");
    // The picture's text is the nodes': escaped like every other text.
    assertThat(html.split("<script>", -1)).hasSize(2);
  }

  @Test
  void evidenceOpensToTheCulpritsOwnRecordsAndToTheLineItQuotes() {
    String html = ReportHtml.page(ReportJsonTest.everyField());

    assertThat(html).contains("rank 5's own records:</p><pre class=\"records\">record 812: pg tp1 #41 "
        + "_all_gather_base completed");
    assertThat(ReportHtml.quotedLine("node-a: local protection error: \"node-a:1:1 [0] NCCL WARN \"x\" y\" [n.log:31]"))
        .containsExactly("node-a:1:1 [0] NCCL WARN \"x\" y", "n.log:31");
    assertThat(ReportHtml.quotedLine("status 12: \"the line\"")).containsExactly("the line", "");
    assertThat(ReportHtml.quotedLine("Ranks 0-3 wait for rank 4")).isNull();
  }
}
