package dev.frdiag.readers.kineto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hand-made traces for the edge cases; real ones (Holistic Trace Analysis' test data, torch 2.13 gloo traces) are
 * read in the evidence module's tests, where the analysis reads them too.
 */
class KinetoTraceReaderTest {
  @TempDir
  Path dir;

  private static RankTrace only(KinetoTrace t) {
    assertThat(t.ranks()).hasSize(1);
    return t.ranks().get(0);
  }

  @Test
  void takesTheRankFromTheFileNameWhenDistributedInfoHasNone() throws Exception {
    Path f = write("rank7.1700000000000.pt.trace.json", trace("", List.of(
        rpc(0, 10, "1000.000", "allreduce", "0", 3), kernel(0, 10, "1001.500", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"))));

    RankTrace r = only(KinetoTraceReader.create().read(f));

    assertThat(r.rank()).isEqualTo(7);
    assertThat(r.rankFrom()).isEqualTo("the file name");
    assertThat(r.collectives()).singleElement().satisfies(c -> {
      assertThat(c.seq()).isEqualTo(3);
      assertThat(c.startNs()).isEqualTo(1_001_500);
    });
  }

  @Test
  void refusesATraceThatSaysNotWhoseItIs() throws Exception {
    Path f = write("host_1234.1700000000000.pt.trace.json", trace("", List.of()));

    assertThatThrownBy(() -> KinetoTraceReader.create().read(f)).isInstanceOf(TraceFormatException.class)
        .hasMessage("whose trace: distributedInfo names no rank and the file name holds none (name it rank<N>…, "
            + "e.g. rank3.pt.trace.json) (" + f + ")");
  }

  @Test
  void refusesAFileThatIsNoTrace() throws Exception {
    Path f = write("rank0.json", "{\"entries\": []}");

    assertThatThrownBy(() -> KinetoTraceReader.create().read(f)).isInstanceOf(TraceFormatException.class)
        .hasMessage("not a profiler trace: no \"traceEvents\" (" + f + ")");
  }

  @Test
  void keepsWhatPrecedesTheCutOfATruncatedTrace() throws Exception {
    String whole = trace("\"distributedInfo\": {\"rank\": 2},", List.of(
        rpc(0, 10, "1000.000", "allreduce", "0", 1), rpc(0, 11, "2000.000", "allreduce", "0", 2)));
    Path f = write("rank2.pt.trace.json.tmp", whole.substring(0, whole.lastIndexOf("{\"ph\"") + 30));

    KinetoTrace t = KinetoTraceReader.create().read(f);

    assertThat(only(t).collectives()).singleElement().extracting(TraceCollective::seq).isEqualTo(1L);
    assertThat(t.notes()).singleElement().asString().startsWith("cut short at byte ");
  }

  @Test
  void neverLinksKernelsToAnotherRanksOpInAMergedFile() throws Exception {
    // Two ranks merged in one file: their External ids collide (both 10); each kernel must stay with its rank.
    String events = String.join(",\n", rpcOf(0, 10, "1000.000", "allreduce", 1), kernelOf(0, 10, "1100.000"),
        rpcOf(1, 10, "5000.000", "allreduce", 1), kernelOf(1, 10, "9100.000"));
    Path f = write("merged.json", "{\"traceEvents\": [\n" + events + "\n]}");

    KinetoTrace t = KinetoTraceReader.create().read(f);

    assertThat(t.ranks()).extracting(RankTrace::rank).containsExactly(0, 1);
    Map<Integer, RankTrace> byRank = t.ranks().stream().collect(Collectors.toMap(RankTrace::rank,
        Function.identity()));
    assertThat(byRank.get(0).collectives()).singleElement().satisfies(c -> {
      assertThat(c.issuedNs()).isEqualTo(1_000_000);
      assertThat(c.startNs()).isEqualTo(1_100_000);
    });
    assertThat(byRank.get(1).collectives()).singleElement().satisfies(c -> {
      assertThat(c.issuedNs()).isEqualTo(5_000_000);
      assertThat(c.startNs()).isEqualTo(9_100_000);
    });
  }

  @Test
  void readsSeqAndUnsignedCommsIdsQuotedOrNot() throws Exception {
    String rpc = "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 1, \"tid\": 1, "
        + "\"ts\": 10.000, \"dur\": 1, \"args\": {\"External id\": 4, \"Collective name\": \"\\\"allreduce\\\"\", "
        + "\"Process Group Name\": \"0\", \"Seq\": \"\\\"42\\\"\", \"Comms Id\": 18446744073709551615}}";
    Path f = write("rank0.json", trace("", List.of(rpc)));

    TraceCollective c = only(KinetoTraceReader.create().read(f)).collectives().get(0);

    assertThat(c.op()).isEqualTo("allreduce");
    assertThat(c.seq()).isEqualTo(42);
    assertThat(c.hasCommsId()).isTrue();
    assertThat(Long.toUnsignedString(c.commsId())).isEqualTo("18446744073709551615");
  }

  @Test
  void toldGzipByContentNotByName() throws Exception {
    Path f = dir.resolve("rank3.json");
    try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(f))) {
      out.write(trace("", List.of(rpc(0, 1, "1.000", "allreduce", "0", 1))).getBytes(StandardCharsets.UTF_8));
    }

    assertThat(only(KinetoTraceReader.create().read(f)).collectives()).hasSize(1);
  }

  @Test
  void ranksFromFileNames() {
    assertThat(KinetoTraceReader.rankFromFileName("sampled_rank-1.json.gz")).hasValue(1);
    assertThat(KinetoTraceReader.rankFromFileName("rank12.1795719590400878694.pt.trace.json")).hasValue(12);
    assertThat(KinetoTraceReader.rankFromFileName("rank0_trace_no_pyfn.json.gz")).hasValue(0);
    assertThat(KinetoTraceReader.rankFromFileName("node3_4242.1700000000.pt.trace.json")).isEmpty();
  }

  private Path write(String name, String text) throws IOException {
    Path f = dir.resolve(name);
    Files.writeString(f, text);
    return f;
  }

  private static String trace(String before, List<String> events) {
    return "{\"schemaVersion\": 1, \"deviceProperties\": [], " + before + " \"traceEvents\": [\n"
        + String.join(",\n", events) + "\n]}";
  }

  private static String rpc(int pid, long ext, String ts, String op, String group, long seq) {
    return "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": " + pid
        + ", \"tid\": 1, \"ts\": " + ts + ", \"dur\": 5.0, \"args\": {\"External id\": " + ext
        + ", \"Collective name\": \"" + op + "\", \"Process Group Name\": \"" + group + "\", \"Seq\": " + seq + "}}";
  }

  private static String kernel(int device, long ext, String ts, String name) {
    return "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + name + "\", \"pid\": " + device
        + ", \"tid\": 7, \"ts\": " + ts + ", \"dur\": 40.0, \"args\": {\"External id\": " + ext
        + ", \"correlation\": " + ext + "}}";
  }

  private static String rpcOf(int rank, long ext, String ts, String op, long seq) {
    return "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": " + (100 + rank)
        + ", \"tid\": 1, \"ts\": " + ts + ", \"dur\": 5.0, \"args\": {\"rank\": " + rank + ", \"External id\": "
        + ext + ", \"Collective name\": \"" + op + "\", \"Process Group Name\": \"0\", \"Seq\": " + seq + "}}";
  }

  private static String kernelOf(int rank, long ext, String ts) {
    return "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL\", \"pid\": 0"
        + ", \"tid\": 7, \"ts\": " + ts + ", \"dur\": 40.0, \"args\": {\"rank\": " + rank + ", \"External id\": "
        + ext + "}}";
  }
}
