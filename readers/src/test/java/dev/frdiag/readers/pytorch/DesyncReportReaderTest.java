package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The lines of PyTorch's desync report: a rank's as posted in a public report of a two-rank hang (NCCL 2.28 on two
 * DGX Spark), and the report's other forms as TraceUtils.h prints them.
 */
class DesyncReportReaderTest {

  @Test
  void aRankThatFinishedACollectiveAndNeverJoinedTheNextIsBehind() {
    DesyncReportReader r = new DesyncReportReader();
    r.accept("[1] finished collective #1155873, but didn't join collective #1155874", "t.log:9");
    assertThat(r.finish()).singleElement().satisfies(l -> {
      assertThat(l.kind()).isEqualTo(DesyncReportReader.Kind.NOT_JOINED_NEXT);
      assertThat(l.ranks()).containsExactly(1);
      assertThat(l.seq()).isEqualTo(1155874);
    });
  }

  @Test
  void theReportsOtherFormsAreRead() {
    DesyncReportReader r = new DesyncReportReader();
    r.accept("\t   - [47] joined but didn't finish collective #41207 (count from 1)", "t.log:1");
    r.accept("\t     [0, 1, 2] finished collective #41207, but didn't join collective #41208 (count from 1)",
        "t.log:2");
    r.accept(" - To our best knowledge, ranks [5, 6] are the lagging ranks that caused this timeout. They never "
        + "joined any collectives", "t.log:3");
    assertThat(r.finish()).extracting(DesyncReportReader.Lagging::kind).containsExactly(
        DesyncReportReader.Kind.STARTED_NOT_FINISHED, DesyncReportReader.Kind.NOT_JOINED_NEXT,
        DesyncReportReader.Kind.NEVER_JOINED);
    assertThat(r.finish().get(2).ranks()).containsExactly(5, 6);
  }
}
