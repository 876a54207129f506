package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.StragglerAnalyzer;
import dev.frdiag.analysis.TimelineEvidence;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Multi-rank traces in the format of a real GPU trace: HTA's real single-rank NCCL trace (resources/kineto/hta/
 * NOTICE.md) replicated into 8 ranks, each rank's clock set apart by its own {@code baseTimeNanoseconds}, and one
 * straggler injected: its kernels start late while every member's collective ends together, as NCCL's do.
 */
class ReplicatedNcclTracesTest {
  /** Floats as decimals: Kineto's µs with three decimals must survive the round trip to the nanosecond. */
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
  private static final int RANKS = 8;
  private static final int STRAGGLER = 5;
  private static final long DELAY_NS = 12_000_000;

  @TempDir
  Path dir;

  /** How the replicas let their collectives be joined. */
  enum Keys {
    /** Seq and Comms Id on every record_param_comms and kernel, as Kineto writes them since 2026-03. */
    SEQ,
    /** The real trace's keys, no Seq: joined by order within the group. */
    ORDER,
    /** No collective keys at all, kernels renamed to today's ncclDevKernel_*: joined by the kernels' order. */
    KERNEL_NAMES
  }

  @Test
  void joinedBySeqTheStragglerIsNamed() throws Exception {
    Diagnosis d = analyze(Keys.SEQ, true);

    assertThat(d.verdict()).isEqualTo(Verdict.SLOW);
    assertThat(d.symptom()).isEqualTo(Symptom.STRAGGLER);
    assertThat(d.culpritRanks()).containsExactly(STRAGGLER);
    assertThat(d.confidence()).isEqualTo(0.9);
    assertThat(joined(d)).isEqualTo("21 collectives of 8 ranks joined from profiler traces: 21 by Seq");
    assertThat(d.headline()).endsWith("it issues them late (CPU side).");
    // Each rank's base is 3.7 ms × rank apart: aligned on the all-reduces' ends (against their median), reported.
    assertThat(d.evidence()).filteredOn(e -> e.kind() == Evidence.Kind.CLOCK_OFFSET).singleElement()
        .satisfies(e -> assertThat(e.detail()).contains("rank 0 -13.0 ms", "rank 7 +13.0 ms"));
    assertThat(d.lateness().ranks().get(STRAGGLER).medianLateNs()).isBetween(DELAY_NS - 100_000,
        DELAY_NS + 100_000);
    assertThat(d.lateness().worst().get(0).busGbps()).isPositive();
  }

  @Test
  void joinedByOrderWithinTheGroupTheStragglerIsNamed() throws Exception {
    Diagnosis d = analyze(Keys.ORDER, true);

    assertThat(d.culpritRanks()).containsExactly(STRAGGLER);
    assertThat(d.confidence()).isEqualTo(0.8);
    assertThat(joined(d)).isEqualTo("21 collectives of 8 ranks joined from profiler traces: 21 by order within the "
        + "group");
  }

  @Test
  void joinedByKernelNamesAloneTheStragglerIsNamedOnTheGpuSide() throws Exception {
    Diagnosis d = analyze(Keys.KERNEL_NAMES, false);

    assertThat(d.culpritRanks()).containsExactly(STRAGGLER);
    assertThat(d.confidence()).isEqualTo(0.7);
    assertThat(joined(d)).startsWith("21 collectives of 8 ranks joined from profiler traces: 21 by order of "
        + "communication kernels");
    // No record_param_comms names the collectives, so no issue time: the device's lateness alone.
    assertThat(d.evidence()).anySatisfy(e -> assertThat(e.kind()).isEqualTo(Evidence.Kind.STRAGGLER_SIDE));
  }

  @Test
  void aRankWhoseDeviceAloneIsLateIsLateOnTheGpuSide() throws Exception {
    Diagnosis d = analyze(Keys.SEQ, false);

    assertThat(d.culpritRanks()).containsExactly(STRAGGLER);
    assertThat(d.headline()).endsWith("its device starts them late though issued on time (GPU side).");
  }

  @Test
  void replicasWithoutAStragglerNameNone() throws Exception {
    Path out = Files.createDirectories(dir.resolve("healthy"));
    replicate(out, Keys.SEQ, -1, true);

    Diagnosis d = StragglerAnalyzer.analyze(read(out));

    assertThat(d.verdict()).isEqualTo(Verdict.NO_HANG);
    assertThat(d.culpritRanks()).isEmpty();
  }

  private Diagnosis analyze(Keys keys, boolean cpuLate) throws Exception {
    Path out = Files.createDirectories(dir.resolve(keys.name()));
    replicate(out, keys, STRAGGLER, cpuLate);
    return StragglerAnalyzer.analyze(read(out));
  }

  private static TimelineEvidence read(Path out) throws Exception {
    EvidenceReader.Gathered g = EvidenceReader.builder().build().read(List.of(out), ReadProgress.SILENT);
    assertThat(g.traceFiles()).isEqualTo(RANKS);
    return g.timelines().orElseThrow();
  }

  private static String joined(Diagnosis d) {
    return d.evidence().stream().filter(e -> e.kind() == Evidence.Kind.JOINED).findFirst().orElseThrow().detail();
  }

  /**
   * Writes {@link #RANKS} replicas of the real trace: rank r's base moved by 3.7 ms × r; the straggler's
   * communication kernels (and its record_param_comms when {@code cpuLate}) {@link #DELAY_NS} later, every other
   * rank's communication kernels that much longer, so each collective ends together on every member.
   */
  private static void replicate(Path out, Keys keys, int straggler, boolean cpuLate) throws Exception {
    JsonNode source = source();
    for (int r = 0; r < RANKS; r++) {
      ObjectNode root = source.deepCopy();
      root.put("baseTimeNanoseconds", root.get("baseTimeNanoseconds").asLong() + r * 3_700_000L);
      ObjectNode info = (ObjectNode) root.get("distributedInfo");
      info.put("rank", r);
      info.put("world_size", RANKS);
      String members = "[0, 1, 2, 3, 4, 5, 6, 7]";
      Map<Long, Long> seqOf = new HashMap<>();
      long seq = 0;
      for (JsonNode e : root.get("traceEvents")) {
        if (isCollectiveOp(e)) {
          seqOf.put(e.get("args").get("External id").asLong(), ++seq);
        }
      }
      for (JsonNode node : (ArrayNode) root.get("traceEvents")) {
        ObjectNode e = (ObjectNode) node;
        JsonNode args = e.get("args");
        boolean comm = "kernel".equals(e.path("cat").asText()) && e.path("name").asText().startsWith("nccl");
        boolean op = isCollectiveOp(e);
        if (!comm && !op) {
          continue;
        }
        ObjectNode a = (ObjectNode) args;
        Long k = seqOf.get(a.path("External id").asLong(-1));
        if (a.has("Process Group Ranks")) {
          a.put("Process Group Ranks", members);
          a.put("Group size", RANKS);
        }
        if (keys == Keys.SEQ && k != null) {
          a.put("Seq", k);
          // Kineto prints Comms Id unquoted as an unsigned 64-bit integer.
          a.set("Comms Id", JSON.getNodeFactory().numberNode(new java.math.BigInteger("18000000000000000000")
              .add(java.math.BigInteger.valueOf(k))));
        }
        if (keys == Keys.KERNEL_NAMES) {
          for (String key : List.of("Collective name", "Process Group Name", "Process Group Description",
              "Process Group Ranks", "In msg nelems", "Out msg nelems", "dtype", "Group size")) {
            a.remove(key);
          }
          if (comm) {
            String name = e.get("name").asText();
            e.put("name", "ncclDevKernel_" + name.split("_")[1] + "_Sum_f32_RING_LL");
          }
        }
        if (r == straggler) {
          if (comm || cpuLate) {
            e.put("ts", micros(e.get("ts")).add(BigDecimal.valueOf(DELAY_NS, 3)));
          }
        } else if (comm && straggler >= 0) {
          e.put("dur", micros(e.get("dur")).add(BigDecimal.valueOf(DELAY_NS, 3)));
        }
      }
      // Plain: compressing eight replicas would cost the test more than reading them.
      try (OutputStream o = Files.newOutputStream(out.resolve("rank" + r + ".1716423322.pt.trace.json"))) {
        JSON.writeValue(o, root);
      }
    }
  }

  private static JsonNode source;

  /** The real trace, parsed once for every test. */
  private static synchronized JsonNode source() throws Exception {
    if (source == null) {
      try (InputStream in = new GZIPInputStream(Files.newInputStream(ProfilerTracesTest.sample(
          "hta/nccl_data.json.gz")))) {
        source = JSON.readTree(in);
      }
    }
    return source;
  }

  private static boolean isCollectiveOp(JsonNode e) {
    return "record_param_comms".equals(e.path("name").asText()) && e.path("args").has("Collective name")
        && !"wait".equals(e.path("args").path("Collective name").asText());
  }

  /** µs with three decimals, exact. */
  private static BigDecimal micros(JsonNode n) {
    return n.decimalValue().setScale(3, java.math.RoundingMode.UNNECESSARY);
  }
}
