package dev.frdiag.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import dev.frdiag.analysis.CollectiveRef;
import dev.frdiag.analysis.Culprit;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.FabricMap;
import dev.frdiag.analysis.GroupProgress;
import dev.frdiag.analysis.StuckCollective;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReportJsonTest {
  /** The frdiag.report/v1 text of {@link #everyField()}, pinned: the JSON is a public contract. */
  private static final String GOLDEN = "/golden/report-every-field.json";

  @Test
  void writesEveryFieldExactlyAsPinned() throws IOException {
    assertThat(ReportJson.write(everyField())).isEqualTo(golden());
  }

  @Test
  void readsBackWhatItWrites() {
    Report report = everyField();
    assertThat(ReportJson.read(ReportJson.write(report))).isEqualTo(report);
  }

  @Test
  void readsThePinnedText() throws IOException {
    assertThat(ReportJson.read(golden())).isEqualTo(everyField());
  }

  /**
   * A hang that ended by itself: said in the headline, the timeline and a field of its own in every format, with
   * nothing to drain or exclude, and read back as written.
   */
  @Test
  void aHangThatEndedByItselfSaysSoAndOffersNothingToLeaveOut() {
    Report r = everyField();
    Report dead = new Report(r.schema(), r.reportId(), r.job(), r.verdict(), Symptom.DEAD_RANK, r.headline(),
        r.culpritRanks(), r.culpritHosts(), r.collective(), r.confidence(), r.evidence(), r.createdAt(), r.trigger(),
        r.timeline(), r.culprits(), r.stuckCollectives(), r.rankStates(), r.recommendation(), r.scheduler(),
        r.groupProgress(), r.fabric(), r.lateness(), null);
    assertThat(dead.exclude()).containsExactly("node-b");
    Instant at = r.createdAt().plusSeconds(40);

    Report recovered = dead.recovered(at);

    assertThat(recovered.recoveredAt()).isEqualTo(at);
    assertThat(recovered.exclude()).isEmpty();
    assertThat(recovered.headline()).startsWith("Recovered by itself after standing still ").endsWith(r.headline());
    assertThat(recovered.recommendation()).startsWith("Nothing to drain or exclude").contains("rank 5");
    Report.TimelineEntry last = recovered.timeline().get(recovered.timeline().size() - 1);
    assertThat(last.at()).isEqualTo(at);
    assertThat(last.event()).startsWith("recovered: every group that had stalled advanced again");
    String json = ReportJson.write(recovered);
    assertThat(json).contains("\"recovered_at\" : \"" + Report.time(at) + "\"").doesNotContain("\"exclude\"");
    assertThat(ReportJson.read(json)).isEqualTo(recovered);
    assertThat(ReportText.plain(recovered)).contains("recovered").doesNotContain("srun --exclude");
    assertThat(ReportHtml.page(recovered)).contains("id=\"recovered\"", "class=\"verdict recovered\"", ">RECOVERED<")
        .doesNotContain("srun --exclude");
    assertThat(ReportJson.write(dead)).doesNotContain("recovered_at");
  }

  @Test
  void textNamesTheSchedulerJob() {
    assertThat(ReportText.plain(everyField())).contains("  scheduler      slurm.job_id=4242, slurm.job_name=llama-7b,"
        + " slurm.restart_count=1, torchelastic.restart_count=2, torchelastic.run_id=4242\n");
    assertThat(ReportText.markdown(everyField())).contains("- **scheduler**: slurm.job\\_id=4242, ");
  }

  @Test
  void leavesOutSchedulerNamesWhenThereAreNone() {
    Report r = everyField();
    Report none = new Report(r.schema(), r.reportId(), r.job(), r.verdict(), r.symptom(), r.headline(),
        r.culpritRanks(), r.culpritHosts(), r.collective(), r.confidence(), r.evidence(), r.createdAt(), r.trigger(),
        r.timeline(), r.culprits(), r.stuckCollectives(), r.rankStates(), r.recommendation(), Map.of(),
        r.groupProgress(), r.fabric(), r.lateness(), r.recoveredAt());

    assertThat(ReportJson.write(none)).doesNotContain("scheduler");
  }

  @Test
  void readsAReportWrittenBeforeSchedulerNamesAsHavingNone() throws IOException {
    String json = golden().replaceFirst(",\\s*\"scheduler\" : \\{[^}]*}", "");

    assertThat(json).doesNotContain("scheduler");
    assertThat(ReportJson.read(json).scheduler()).isEmpty();
  }

  @Test
  void namesTheFieldAndValueOfAnUnknownEvidenceKind() throws IOException {
    String json = golden().replace("\"kind\" : \"cascade\"", "\"kind\" : \"gremlins\"");
    assertThatThrownBy(() -> ReportJson.read(json)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("not a frdiag report: unknown evidence kind 'gremlins' (field evidence[2].kind)");
  }

  @Test
  void namesTheFieldAndValueOfAnUnknownTrigger() throws IOException {
    String json = golden().replace("\"trigger\" : \"stall\"", "\"trigger\" : \"cosmic_ray\"");
    assertThatThrownBy(() -> ReportJson.read(json)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("not a frdiag report: unknown trigger 'cosmic_ray' (field trigger)");
  }

  @Test
  void namesTheValueOfAnUnknownRankState() throws IOException {
    String json = golden().replace("\"state\" : \"lost\"", "\"state\" : \"on holiday\"");
    assertThatThrownBy(() -> ReportJson.read(json)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("not a frdiag report: unknown rank state 'on holiday'")
        .hasMessageContaining("rank_states[3]");
  }

  @Test
  void namesTheFieldOfACreationTimeThatIsNoInstant() throws IOException {
    String json = golden().replace("\"created_at\" : \"2025-03-14T09:26:53.589793Z\"",
        "\"created_at\" : \"yesterday\"");
    assertThatThrownBy(() -> ReportJson.read(json)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("not a frdiag report: 'yesterday' is not an ISO-8601 instant (field created_at)");
  }

  @Test
  void refusesAStoredReportWithANullHeadlineNamingTheField() throws IOException {
    String json = golden().replaceFirst("\"headline\" : \"[^\"]*\"", "\"headline\" : null");
    assertThatThrownBy(() -> ReportJson.read(json)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("not a frdiag report: field headline is missing or null");
  }

  @Test
  void refusesANullElementDeepInsideNamingWhere() throws IOException {
    String json = golden().replace("\"detail\" : \"Rank 4 reported watchdog timeout\"", "\"detail\" : null");
    assertThatThrownBy(() -> ReportJson.read(json)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("not a frdiag report: field evidence[3].detail is missing or null");
  }

  /**
   * Every field of a report that uses every field, made null or left out in turn: the report is either refused
   * with an IllegalArgumentException when read, or read into one that every reader can use (written back,
   * rendered as text, Markdown and HTML). A report that reads but then fails its readers is what made every read
   * of a job fail.
   */
  @Test
  void aReportMissingAnyOneFieldIsRefusedOrReadableEverywhere() throws IOException {
    JsonNode whole = JSON.readTree(golden());
    List<String> paths = new ArrayList<>();
    fieldsOf(whole, "", paths);
    assertThat(paths).hasSizeGreaterThan(100);
    int readable = 0;
    for (String path : paths) {
      for (boolean leftOut : new boolean[] {false, true}) {
        JsonNode copy = whole.deepCopy();
        damage(copy, path, leftOut);
        Report report;
        try {
          report = ReportJson.read(JSON.writeValueAsString(copy));
        } catch (IllegalArgumentException refused) {
          continue;
        }
        readable++;
        assertThatCode(() -> {
          ReportJson.write(report);
          ReportText.plain(report);
          ReportText.markdown(report);
          ReportHtml.page(report);
        }).as("%s %s", path, leftOut ? "left out" : "null").doesNotThrowAnyException();
      }
    }
    assertThat(readable).as("collective and fabric may be null or left out").isGreaterThanOrEqualTo(2);
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  /** The path of every field and list element under {@code node}: "culprits/0/host". */
  private static void fieldsOf(JsonNode node, String path, List<String> out) {
    if (node.isObject()) {
      node.fieldNames().forEachRemaining(name -> {
        out.add(path + "/" + name);
        fieldsOf(node.get(name), path + "/" + name, out);
      });
    } else if (node.isArray()) {
      for (int i = 0; i < node.size(); i++) {
        out.add(path + "/" + i);
        fieldsOf(node.get(i), path + "/" + i, out);
      }
    }
  }

  private static void damage(JsonNode root, String path, boolean leftOut) {
    int cut = path.lastIndexOf('/');
    JsonNode parent = root.at(path.substring(0, cut));
    String last = path.substring(cut + 1);
    if (parent instanceof ObjectNode o) {
      if (leftOut) {
        o.remove(last);
      } else {
        o.putNull(last);
      }
    } else if (parent instanceof ArrayNode a) {
      if (leftOut) {
        a.remove(Integer.parseInt(last));
      } else {
        a.set(Integer.parseInt(last), NullNode.getInstance());
      }
    }
  }

  @Test
  void everyWireNameReadsBackAsItsConstant() {
    for (Evidence.Kind k : Evidence.Kind.values()) {
      assertThat(Evidence.Kind.fromWire(k.wire())).isEqualTo(k);
    }
    for (Report.Trigger t : Report.Trigger.values()) {
      assertThat(Report.Trigger.fromWire(t.wire())).isEqualTo(t);
    }
  }

  static Report everyField() {
    CollectiveRef tp = new CollectiveRef("tp1", "tensor_parallel", 42, false, "_all_gather_base",
        "00a1b2c3d4e5f607");
    CollectiveRef dp = new CollectiveRef("0", "", 17, false, "all_reduce", "");
    List<Evidence> evidence = List.of(
        new Evidence(Evidence.Kind.NOT_ISSUED, List.of(5), "Rank 5 never issued tp1#42 _all_gather_base"),
        new Evidence(Evidence.Kind.WAITING, List.of(6, 4, 7), "Ranks 4, 6, 7 started tp1#42 _all_gather_base and wait"),
        new Evidence(Evidence.Kind.CASCADE, List.of(0, 1, 2, 3), "1 other collective (0#17 all_reduce) waits"),
        new Evidence(Evidence.Kind.RANK_EVENT, List.of(4), "Rank 4 reported watchdog timeout"),
        new Evidence(Evidence.Kind.LINK_FAULT, List.of(), "node-b mlx5_0:1: link_downed +1 [ib counters]"),
        new Evidence(Evidence.Kind.NO_SNAPSHOT, List.of(9), "no fresh snapshot from ranks [9]"));
    Diagnosis d = new Diagnosis(Verdict.HANG, Symptom.CPU_STALL, List.of(5), List.of("node-b"), tp, 0.9,
        evidence,
        List.of(new Culprit(5, "node-b", 4711, 1, "tp1#41 _all_gather_base (completed)",
            List.of("wait_for_batch (loader.py:88)", "train_step (train.py:120)"),
            List.of("record 812: pg tp1 #41 _all_gather_base completed, in [[4096]] BFloat16, out [[32768]] BFloat16, "
                + "created 2025-03-14T09:19:59Z, started +0.2 ms, completed +3.1 ms"))),
        List.of(
            new StuckCollective(tp, true, List.of(), List.of(4, 6, 7), List.of(), List.of(5), List.of(),
                List.of()),
            new StuckCollective(dp, false, List.of(8), List.of(0, 1, 2), List.of(3), List.of(), List.of(9),
                List.of("tp1#42 _all_gather_base"))),
        List.of(new Diagnosis.RankGroup(Diagnosis.State.IDLE, "", List.of(5)),
            new Diagnosis.RankGroup(Diagnosis.State.NOT_STARTED, "all_reduce #17 on 0", List.of(3)),
            new Diagnosis.RankGroup(Diagnosis.State.NOT_COMPLETED, "all_reduce #17 on 0", List.of(8)),
            new Diagnosis.RankGroup(Diagnosis.State.LOST, "", List.of(10)),
            new Diagnosis.RankGroup(Diagnosis.State.NO_EVIDENCE, "", List.of(9)),
            new Diagnosis.RankGroup(Diagnosis.State.WAITING, "_all_gather_base #42 on tensor_parallel",
                List.of(4, 6, 7))),
        "Rank 5 (node-b) never issued _all_gather_base (tp1 tensor_parallel, seq 42): CPU-side stall.",
        "Inspect the culprit's Python stack.", 1_741_944_000_000_000_000L)
        .withProgress(List.of(new GroupProgress(tp, true, 39, true, List.of(
            new GroupProgress.Row("node-a", List.of(4, 6, 7), "CCCSNN", false, false),
            new GroupProgress.Row("node-b", List.of(5), "CCCNNN", false, true)))))
        .withFabric(new FabricMap(List.of(new FabricMap.Host("node-b", true,
            List.of(new FabricMap.Gpu(5, 1, "1b000", "mlx5_1", true, List.of())),
            List.of(new FabricMap.Nic("mlx5_1", List.of(new FabricMap.Port(1, List.of(new FabricMap.Mark(
                Evidence.Kind.LINK_FAULT, "mlx5_1:1 link went down: link_downed 0 -> 1 (+1) in 30 s",
                "infiniband/mlx5_1/ports/1/link_downed", "")))), List.of())),
            List.of(new FabricMap.Mark(Evidence.Kind.DEAD_PEER, "connection closed by remote peer",
                "nccl.log:12", "10.0.0.7<5432>")))), 3));
    List<Report.TimelineEntry> timeline = List.of(
        new Report.TimelineEntry(Instant.parse("2025-03-14T09:20:00Z"), "first divergence: tp1#42 _all_gather_base"),
        new Report.TimelineEntry(Instant.parse("2025-03-14T09:26:53.5Z"), "stall detected"),
        new Report.TimelineEntry(Instant.parse("2025-03-14T09:26:53.589793Z"), "analysed 11 ranks in 3 ms; report written"));
    return Report.of("job42-000003", "job42", Report.Trigger.STALL, Instant.parse("2025-03-14T09:26:53.589793Z"), d,
        timeline, Map.of("slurm.job_id", "4242", "slurm.job_name", "llama-7b", "slurm.restart_count", "1",
            "torchelastic.run_id", "4242", "torchelastic.restart_count", "2"));
  }

  private static String golden() throws IOException {
    try (InputStream in = ReportJsonTest.class.getResourceAsStream(GOLDEN)) {
      assertThat(in).as(GOLDEN).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
