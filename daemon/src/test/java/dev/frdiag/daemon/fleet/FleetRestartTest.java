package dev.frdiag.daemon.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.store.ReportStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Fleet memory is rebuilt from the store's summaries at start: the same ranking however the store was read. */
class FleetRestartTest {
  private static final Instant NOW = Instant.parse("2026-03-01T00:00:00Z");
  private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);

  @TempDir
  Path dataDir;

  private static List<Standing> ranking(Fleet fleet) {
    return fleet.standings(job -> true, true, null, 1);
  }

  @Test
  void aRestartRanksThePartsAsTheDaemonThatSawTheReportsDid() throws Exception {
    ReportStore store = new ReportStore(dataDir);
    Fleet live = new Fleet(FleetSettings.defaults(), CLOCK);
    store.save(FleetReports.gpuStall("a-000001", "a", NOW.minusSeconds(300), "node17", 1), live::accept);
    store.save(FleetReports.gpuStall("b-000001", "b", NOW.minusSeconds(200), "node17", 1), live::accept);
    store.save(FleetReports.gpuStall("b-000002", "b", NOW.minusSeconds(100), "node42", 3), live::accept);
    store.save(FleetReports.linkDown("c-000001", "c", NOW.minusSeconds(50), "node17", "mlx5_3", "10.0.35.1<49189>"),
        live::accept);
    store.save(FleetReports.mismatch("d-000001", "d", NOW, "node99"), live::accept);
    List<Standing> seen = ranking(live);
    assertThat(seen).extracting(s -> s.part().display()).startsWith("node17").contains("node17 cuda:1",
        "node17 mlx5_3/1", "node17 mlx5_3/1 -> 10.0.35.1", "node42 cuda:3").doesNotContain("node99");

    // From the summary index, and from the report files alone when the index is gone.
    assertThat(ranking(new Fleet(FleetSettings.defaults(), CLOCK).rebuild(new ReportStore(dataDir))))
        .isEqualTo(seen);
    Files.delete(dataDir.resolve("reports").resolve("summaries.jsonl"));
    assertThat(ranking(new Fleet(FleetSettings.defaults(), CLOCK).rebuild(new ReportStore(dataDir))))
        .isEqualTo(seen);
  }
}
