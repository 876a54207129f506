package dev.frdiag.daemon.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.store.StoredReport;
import dev.frdiag.proto.v1.Symptom;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Scoring hand-built reports: distinct jobs count, old hangs fade, callers see their jobs only, memory stays bounded. */
class FleetMemoryTest {
  private static final Instant NOW = Instant.parse("2026-11-20T12:00:00Z");

  private static Standing of(List<Standing> all, Part part) {
    return all.stream().filter(s -> s.part().equals(part)).findFirst().orElseThrow(() ->
        new AssertionError(part + " not in " + all));
  }

  @Test
  void manyReportsOfOneJobWeighLessThanThreeJobs() {
    FleetMemory m = new FleetMemory(FleetSettings.defaults());
    for (int i = 1; i <= 10; i++) {
      m.add(StoredReport.of(FleetReports.gpuStall("solo-00000" + i, "solo", NOW.minusSeconds(i), "node03", 2)), NOW, true);
    }
    for (String job : List.of("a", "b", "c")) {
      m.add(StoredReport.of(FleetReports.gpuStall(job + "-000001", job, NOW.minusSeconds(60), "node17", 5)), NOW, true);
    }
    List<Standing> all = m.standings(NOW, j -> true, true, null, 1);

    assertThat(all.get(0).part()).isIn(Part.host("node17"), new Part(Part.Kind.GPU, "node17", "cuda:5"));
    Standing bad = of(all, new Part(Part.Kind.GPU, "node17", "cuda:5"));
    Standing solo = of(all, Part.host("node03"));
    assertThat(bad.jobs()).isEqualTo(3);
    assertThat(bad.score()).isCloseTo(3.0, org.assertj.core.data.Offset.offset(0.01));
    assertThat(solo.incidents()).isEqualTo(10);
    assertThat(solo.jobs()).isEqualTo(1);
    assertThat(solo.score()).isLessThanOrEqualTo(1.0);
    assertThat(solo.alerting()).isFalse();
    assertThat(bad.summary()).isEqualTo("culprit in 3 hangs of 3 jobs in 1 day, GPU_STALL \u00d73");
    assertThat(bad.drain()).isEqualTo("scontrol update nodename=node17 state=drain reason=\"frdiag: node17 cuda:5 "
        + "culprit in 3 hangs of 3 jobs in 1 day, GPU_STALL x3\"");
  }

  @Test
  void oldHangsFadeByTheHalfLife() {
    FleetMemory m = new FleetMemory(FleetSettings.builder().halfLife(Duration.ofDays(7)).build());
    m.add(StoredReport.of(FleetReports.gpuStall("old-000001", "old", NOW.minus(Duration.ofDays(14)), "node01", 0)), NOW, true);
    m.add(StoredReport.of(FleetReports.gpuStall("new-000001", "new", NOW, "node02", 0)), NOW, true);
    List<Standing> all = m.standings(NOW, j -> true, true, null, 1);

    assertThat(of(all, Part.host("node01")).score()).isCloseTo(0.25, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(of(all, Part.host("node02")).score()).isEqualTo(1.0);
    assertThat(all.get(0).part().host()).isEqualTo("node02");
    assertThat(m.standings(NOW, j -> true, true, NOW.minus(Duration.ofDays(7)), 1))
        .extracting(s -> s.part().host()).containsOnly("node02");
  }

  @Test
  void alertsOnceWhenTheThirdJobArrivesAndNotForHistory() {
    FleetMemory m = new FleetMemory(FleetSettings.defaults());
    assertThat(m.add(StoredReport.of(FleetReports.gpuStall("a-000001", "a", NOW, "node17", 1)), NOW, true)).isEmpty();
    assertThat(m.add(StoredReport.of(FleetReports.gpuStall("b-000001", "b", NOW, "node17", 1)), NOW, true)).isEmpty();
    assertThat(m.add(StoredReport.of(FleetReports.gpuStall("b-000002", "b", NOW, "node17", 1)), NOW, true)).as("the same job again").isEmpty();
    List<Standing> crossed = m.add(StoredReport.of(FleetReports.gpuStall("c-000001", "c", NOW, "node17", 1)), NOW, true);
    assertThat(crossed).extracting(Standing::part).containsExactly(Part.host("node17"),
        new Part(Part.Kind.GPU, "node17", "cuda:1"));
    assertThat(m.add(StoredReport.of(FleetReports.gpuStall("d-000001", "d", NOW, "node17", 1)), NOW, true)).as("already alerted").isEmpty();

    FleetMemory rebuilt = new FleetMemory(FleetSettings.defaults());
    for (String job : List.of("a", "b", "c", "d")) {
      assertThat(rebuilt.add(StoredReport.of(FleetReports.gpuStall(job + "-000001", job, NOW, "node17", 1)), NOW, false)).isEmpty();
    }
    rebuilt.settle(NOW);
    assertThat(rebuilt.add(StoredReport.of(FleetReports.gpuStall("e-000001", "e", NOW, "node17", 1)), NOW, true))
        .as("parts above the score at start were alerted on before").isEmpty();
  }

  @Test
  void aReaderOfSomeJobsSeesOnlyTheirIncidents() {
    FleetMemory m = new FleetMemory(FleetSettings.defaults());
    m.add(StoredReport.of(FleetReports.gpuStall("mine-000001", "mine", NOW, "node17", 1)), NOW, true);
    m.add(StoredReport.of(FleetReports.gpuStall("theirs-000001", "theirs", NOW, "node17", 1)), NOW, true);
    m.add(StoredReport.of(FleetReports.gpuStall("theirs-000002", "theirs", NOW, "node42", 1)), NOW, true);
    List<Standing> mine = m.standings(NOW, "mine"::equals, false, null, 1);

    assertThat(mine).extracting(s -> s.part().host()).containsOnly("node17");
    assertThat(mine).allSatisfy(s -> {
      assertThat(s.jobs()).isEqualTo(1);
      assertThat(s.recent()).extracting(Standing.Incident::job).containsOnly("mine");
    });
  }

  @Test
  void aLinkDownMarksThePortAndTheLinkToItsPeerButNotQuietPorts() {
    Map<Part, Sightings.Role> seen = Sightings.of(StoredReport.of(FleetReports.linkDown("f-000001", "f", NOW, "node00", "mlx5_3",
        "10.0.35.1<49189>")));
    assertThat(seen).containsEntry(Part.host("node00"), Sightings.Role.CULPRIT)
        .containsEntry(new Part(Part.Kind.PORT, "node00", "mlx5_3/1"), Sightings.Role.MARKED)
        .containsEntry(new Part(Part.Kind.LINK, "node00", "mlx5_3/1 -> 10.0.35.1"), Sightings.Role.MARKED)
        .hasSize(3);
  }

  @Test
  void aProgramMismatchBlamesNoHardware() {
    FleetMemory m = new FleetMemory(FleetSettings.defaults());
    m.add(StoredReport.of(FleetReports.mismatch("m-000001", "m", NOW, "node05")), NOW, true);
    assertThat(m.standings(NOW, j -> true, true, null, 1)).isEmpty();
  }

  @Test
  void jobsPastThePerPartBoundStillCountForReadersOfEveryJob() {
    FleetMemory m = new FleetMemory(FleetSettings.builder().jobsPerPart(4).maxParts(3).build());
    for (int i = 0; i < 10; i++) {
      m.add(StoredReport.of(FleetReports.gpuStall("j" + i + "-000001", "j" + i, NOW.minusSeconds(10 - i), "node01", 0)), NOW, true);
    }
    Standing host = of(m.standings(NOW, j -> true, true, null, 1), Part.host("node01"));
    assertThat(host.jobs()).isEqualTo(10);
    assertThat(host.incidents()).isEqualTo(10);
    assertThat(host.score()).isCloseTo(10.0, org.assertj.core.data.Offset.offset(0.01));
    assertThat(host.symptoms()).containsExactly(Map.entry(Symptom.GPU_STALL, 10));
    // Readers of some jobs see only the jobs kept by name.
    assertThat(of(m.standings(NOW, j -> true, false, null, 1), Part.host("node01")).jobs()).isEqualTo(4);

    m.add(StoredReport.of(FleetReports.gpuStall("x-000001", "x", NOW, "node02", 0)), NOW, true);
    assertThat(m.parts()).isEqualTo(3);
    assertThat(m.standings(NOW, j -> true, true, null, 1)).extracting(s -> s.part().host()).contains("node02");
  }

  @Test
  void minIncidentsLeavesOutPartsNamedLessOften() {
    FleetMemory m = new FleetMemory(FleetSettings.defaults());
    m.add(StoredReport.of(FleetReports.gpuStall("a-000001", "a", NOW, "node01", 0)), NOW, true);
    m.add(StoredReport.of(FleetReports.gpuStall("a-000002", "a", NOW, "node01", 0)), NOW, true);
    m.add(StoredReport.of(FleetReports.gpuStall("b-000001", "b", NOW, "node02", 0)), NOW, true);
    assertThat(m.standings(NOW, j -> true, true, null, 2)).extracting(s -> s.part().host()).containsOnly("node01");
  }
}
