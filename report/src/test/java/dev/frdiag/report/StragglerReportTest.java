package dev.frdiag.report;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.analysis.CollectiveTiming;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Overlap;
import dev.frdiag.analysis.RankTimeline;
import dev.frdiag.analysis.StragglerAnalyzer;
import dev.frdiag.analysis.TimelineEvidence;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A straggler analysis' report in every form: JSON read back, text, and the page's lateness picture. */
class StragglerReportTest {
  private static final long MS = 1_000_000;

  /** Four ranks, 30 all-reduces, rank 2 issuing each 25 ms late; rank 0's device hides half its communication. */
  static Report slow() {
    List<RankTimeline> ranks = new ArrayList<>();
    for (int r = 0; r < 4; r++) {
      List<CollectiveTiming> c = new ArrayList<>();
      for (int s = 1; s <= 30; s++) {
        long t = 1_790_000_000_000_000_000L + s * 100 * MS + (r == 2 ? 25 * MS : 0) + r * 10_000;
        c.add(new CollectiveTiming("0", List.of(0, 1, 2, 3), s, false, s, true, "allreduce", 1 << 20, t, t + MS,
            1_790_000_000_000_000_000L + s * 100 * MS + 29 * MS));
      }
      ranks.add(new RankTimeline(r, "node" + r, c, r == 0 ? new Overlap(100 * MS, 40 * MS, 20 * MS)
          : Overlap.UNKNOWN));
    }
    Diagnosis d = StragglerAnalyzer.analyze(new TimelineEvidence("job", ranks, "profiler traces", true));
    return Report.of("", "job", Report.Trigger.OFFLINE, Instant.parse("2026-11-26T10:00:00Z"), d, List.of());
  }

  @Test
  void aStragglerReportReadsBackWithItsLateness() {
    Report r = slow();

    String json = ReportJson.write(r);

    assertThat(json).contains("\"verdict\" : \"SLOW\"", "\"symptom\" : \"STRAGGLER\"", "\"lateness\" : {",
        "\"late_by_bucket_ns\" : [", "\"bus_gbps\" : ");
    assertThat(ReportJson.read(json)).isEqualTo(r);
  }

  @Test
  void aBucketInWhichARankJoinedNoCollectiveReadsBackAsNone() {
    String json = ReportJson.write(slow()).replaceFirst("(\"late_by_bucket_ns\" : \\[ )-?\\d+", "$1null");

    assertThat(json).contains("\"late_by_bucket_ns\" : [ null");
    assertThat(ReportJson.read(json).lateness().ranks()).anySatisfy(r -> assertThat(r.lateByBucketNs()).contains(
        (Long) null));
  }

  @Test
  void theTextListsTheCulpritsFiguresFirst() {
    String text = ReportText.plain(slow());

    assertThat(text).startsWith("Rank 2 arrives last at 30 of 30 collectives where the members waited");
    assertThat(text).contains("  SLOW · STRAGGLER · confidence 0.90\n", "Lateness (30 collectives, arrival = device "
        + "start):\n  - rank 2 (culprit): last at 30 of 30, median 25.0 ms late");
    assertThat(text).contains("  - rank 0: last at 0 of 30, median ", "50 % of communication hidden, 20.0 ms exposed");
  }

  @Test
  void thePageDrawsEachRanksLatenessOverTimeWithTheCulpritOutlined() {
    String html = ReportHtml.page(slow());

    assertThat(html).contains("<header class=\"verdict slow\">", "<section id=\"lateness\">",
        "<g class=\"row culprit\" data-rank=\"2\">", "<table class=\"list\" id=\"lateness-worst\">");
    assertThat(html.split("<g class=\"row")).hasSize(5);
  }

  @Test
  void reportsWithoutLatenessLeaveItOut() {
    Report none = Report.of("", "job", Report.Trigger.OFFLINE, Instant.parse("2026-11-26T10:00:00Z"),
        slow().lateness() == null ? null : new Diagnosis(dev.frdiag.proto.v1.Verdict.NO_HANG,
            dev.frdiag.proto.v1.Symptom.NONE, List.of(), List.of(), null, 0.9, List.of(), List.of(), List.of(),
            List.of(), "fine", "nothing", 0), List.of());

    assertThat(ReportJson.write(none)).doesNotContain("lateness");
    assertThat(ReportHtml.page(none)).doesNotContain("id=\"lateness\"");
  }
}
