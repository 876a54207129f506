package dev.frdiag.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.frdiag.cli.FrDiagnose;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.report.Report;
import dev.frdiag.testing.browser.HeadlessChromium;
import dev.frdiag.testing.dumps.DumpWriter;
import dev.frdiag.testing.dumps.FaultyDumps;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The report page in a real headless Chromium: served by the daemon for every fault kind the demo injects, and
 * written offline by {@code fr-diagnose analyze --html} for a 4,096-rank job. Screenshots go to
 * {@code target/screenshots/} for people to look at.
 */
class ReportPageBrowserTest {
  private static final int WIDTH = 1280;
  private static final int HEIGHT = 900;
  private static final Path SCREENSHOTS = Path.of("target", "screenshots");
  private static HeadlessChromium browser;

  @BeforeAll
  static void startBrowser() throws Exception {
    assertThat(HeadlessChromium.missing()).as("the page tests need a browser").isEmpty();
    browser = HeadlessChromium.start(WIDTH, HEIGHT);
  }

  @AfterAll
  static void stopBrowser() {
    if (browser != null) {
      browser.close();
    }
  }

  /** What the page shows, read from its DOM once loaded. */
  private static JsonNode look() throws Exception {
    return browser.script("""
        const grids = Array.from(document.querySelectorAll('section.grid'));
        const first = grids[0];
        // The widest picture: where the whole job stands.
        const grid = grids.reduce((a, g) => !a || +g.dataset.members > +a.dataset.members ? g : a, null);
        return {
          widest: grid ? grid.id : '',
          members: grid ? +grid.dataset.members : 0,
          headline: document.getElementById('headline').textContent,
          grids: document.querySelectorAll('section.grid').length,
          drawnRows: grid ? grid.querySelectorAll('tr.row').length : 0,
          culpritRows: first ? first.querySelectorAll('tr[data-culprit="true"]').length : 0,
          culpritCellsOutlined: first ? Array.from(first.querySelectorAll('tr.culprit td.cell'))
              .every(td => getComputedStyle(td).outlineStyle === 'solid') : false,
          visibleParts: document.querySelectorAll('tr.part:not([hidden])').length,
          gridHeight: grid ? grid.getBoundingClientRect().height : 0,
          fabricParts: document.querySelectorAll('svg.fabric g').length,
          fabricFailingFills: Array.from(document.querySelectorAll('svg.fabric g.failing rect'))
              .map(r => getComputedStyle(r).fill),
          evidenceRaw: document.querySelectorAll('details.evidence .raw pre').length,
          loadMs: performance.getEntriesByType('navigation')[0].loadEventEnd
        };""");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({"cpu-stall, 5", "gpu-stall, 11", "mismatch, 6", "dead-rank, 14", "fabric, 3"})
  void theDaemonServesEachFaultsPageWithItsCulpritMarkedAndNoConsoleErrors(String fault, int rank,
      @TempDir Path dataDir) throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDemo.run(new String[] {"--fault", fault, "--rank", Integer.toString(rank), "--at-step", "4",
        "--stall-timeout", "1s", "--data-dir", dataDir.toString(), "--web-port", "-1"}, new PrintWriter(out),
        new PrintWriter(err));
    assertThat(code).as(err.toString()).isZero();
    try (Daemon daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).webPort(0)
        .dataDir(dataDir).build()).start()) {
      Report report = daemon.store().latest("demo").orElseThrow();
      browser.consoleErrors();
      browser.open(daemon.pageOf(report).orElseThrow());
      JsonNode page = look();
      browser.screenshot(SCREENSHOTS.resolve("daemon-" + fault + ".png"));

      assertThat(browser.consoleErrors()).isEmpty();
      assertThat(page.path("headline").asText()).isEqualTo(report.headline());
      assertThat(page.path("grids").asInt()).isPositive();
      // The first picture is the operation the verdict names: its culprits' rows are marked.
      if (report.culpritRanks().isEmpty()) {
        assertThat(page.path("culpritRows").asInt()).isZero();
      } else {
        assertThat(page.path("culpritRows").asInt()).isPositive();
        assertThat(page.path("culpritCellsOutlined").asBoolean()).isTrue();
      }
      // Each fact opens to what it rests on: the culprits' records or the log line and counters it quotes.
      assertThat(page.path("evidenceRaw").asInt()).isPositive();
      if (fault.equals("fabric")) {
        // The network picture: the port whose link went down, drawn red.
        assertThat(report.fabric()).isNotNull();
        assertThat(page.path("fabricParts").asInt()).isGreaterThan(8);
        assertThat(page.path("fabricFailingFills")).isNotEmpty()
            .allSatisfy(fill -> assertThat(fill.asText()).isEqualTo("rgb(255, 205, 210)"));
      } else {
        assertThat(page.path("fabricParts").asInt()).isZero();
      }
    }
  }

  @Test
  void a4096RankPageWrittenOfflineStaysOneScreenHighAndOpensIntoHosts(@TempDir Path dir) throws Exception {
    Path dumps = Files.createDirectories(dir.resolve("dumps"));
    FaultyDumps.builder().ranks(4096).entriesPerRank(8).fault(FaultyDumps.Kind.CPU_STALL, 1234).build()
        .write(dumps, "nccl_trace_rank_", DumpWriter.Encoding.PICKLE);
    Path html = dir.resolve("report.html");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDiagnose.run(new String[] {"analyze", dumps.toString(), "--quiet", "--html", html.toString()},
        new PrintWriter(out), new PrintWriter(err));
    assertThat(code).as(err.toString()).isEqualTo(1);
    assertThat(err.toString()).contains("report page written to " + html.toAbsolutePath());

    browser.consoleErrors();
    browser.open(html.toUri().toString());
    JsonNode page = look();
    browser.screenshot(SCREENSHOTS.resolve("offline-4096-ranks.png"));
    assertThat(browser.consoleErrors()).isEmpty();
    // The load time is reported, not asserted: page tests are not benchmarks.
    System.out.printf("4,096-rank report page: %.0f ms to load, grid %.0f px high, %d rows drawn%n",
        page.path("loadMs").asDouble(), page.path("gridHeight").asDouble(), page.path("drawnRows").asInt());
    assertThat(page.path("culpritRows").asInt()).isEqualTo(1);
    assertThat(page.path("members").asInt()).isEqualTo(4096);
    assertThat(page.path("drawnRows").asInt()).isBetween(2, 8);
    assertThat(page.path("gridHeight").asDouble()).isLessThanOrEqualTo(HEIGHT);
  }

  @Test
  void aRowMergedAcrossHostsOpensIntoItsHosts(@TempDir Path dataDir) throws Exception {
    // A fabric fault: every rank stands at the same place, so the 8 hosts' rows merge into one.
    int code = FrDemo.run(new String[] {"--fault", "fabric", "--ranks", "64", "--ranks-per-host", "8",
        "--at-step", "4", "--stall-timeout", "1s", "--data-dir", dataDir.toString(), "--web-port", "-1"},
        new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
    assertThat(code).isZero();
    try (Daemon daemon = new Daemon(DaemonSettings.builder().bindAddress("127.0.0.1").port(0).webPort(0)
        .dataDir(dataDir).build()).start()) {
      browser.open(daemon.pageOf(daemon.store().latest("demo").orElseThrow()).orElseThrow());
      JsonNode page = look();
      assertThat(page.path("members").asInt()).isEqualTo(64);
      assertThat(page.path("drawnRows").asInt()).isEqualTo(1);
      assertThat(page.path("visibleParts").asInt()).isZero();

      browser.click("#" + page.path("widest").asText() + " button.expand");
      assertThat(look().path("visibleParts").asInt()).as("the merged row's hosts, shown").isEqualTo(8);
      browser.screenshot(SCREENSHOTS.resolve("daemon-fabric-64-ranks-opened.png"));
      browser.click("#" + page.path("widest").asText() + " button.expand");
      assertThat(look().path("visibleParts").asInt()).as("and hidden again").isZero();
      assertThat(browser.consoleErrors()).isEmpty();
    }
  }
}
