package dev.frdiag.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.ListPartsRequest;
import dev.frdiag.proto.v1.ListPartsResponse;
import dev.frdiag.proto.v1.PartIncident;
import dev.frdiag.proto.v1.PartKind;
import dev.frdiag.proto.v1.PartStanding;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.SymptomCount;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code fr-diagnose nodes} against a daemon on loopback that answers with a fixed ranking. */
class NodesCommandTest {
  private static final long T = Instant.parse("2026-11-20T10:00:00Z").toEpochMilli();
  private final AtomicReference<ListPartsRequest> asked = new AtomicReference<>();
  private Server server;

  @BeforeEach
  void start() throws Exception {
    PartStanding gpu = PartStanding.newBuilder().setKind(PartKind.PART_GPU).setHost("node17").setPart("cuda:3")
        .setScore(2.87).setJobs(3).setIncidents(3).setAsCulprit(3).setFirstMs(T).setLastMs(T).setAlerting(true)
        .addSymptoms(SymptomCount.newBuilder().setSymptom(Symptom.GPU_STALL).setIncidents(3))
        .setSummary("culprit in 3 hangs of 3 jobs in 7 days, GPU_STALL \u00d73")
        .setDrain("scontrol update nodename=node17 state=drain reason=\"frdiag: node17 cuda:3 culprit in 3 hangs\"")
        .addRecent(PartIncident.newBuilder().setReportId("a-000001").setJobId("a").setAtMs(T)
            .setSymptom(Symptom.GPU_STALL).setCulprit(true)).build();
    PartStanding port = PartStanding.newBuilder().setKind(PartKind.PART_PORT).setHost("node03").setPart("mlx5_3/1")
        .setScore(0.5).setJobs(1).setIncidents(1).setFirstMs(T).setLastMs(T)
        .addSymptoms(SymptomCount.newBuilder().setSymptom(Symptom.FABRIC).setIncidents(1))
        .setSummary("marked in 1 hang of 1 job in 8 days, FABRIC \u00d71").build();
    server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(new DiagnosisGrpc.DiagnosisImplBase() {
          @Override
          public void listParts(ListPartsRequest request, StreamObserver<ListPartsResponse> out) {
            asked.set(request);
            out.onNext(ListPartsResponse.newBuilder().addParts(gpu).addParts(port).setTotal(3)
                .setHalfLifeMs(Duration.ofDays(14).toMillis()).setAlertScore(2.1).setAsOfMs(T).build());
            out.onCompleted();
          }
        }).build().start();
  }

  @AfterEach
  void stop() throws Exception {
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private String run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    String[] all = new String[args.length + 2];
    all[0] = "--daemon";
    all[1] = "127.0.0.1:" + server.getPort();
    System.arraycopy(args, 0, all, 2, args.length);
    int code = FrDiagnose.run(all, new PrintWriter(out, true), new PrintWriter(err, true));
    assertThat(code).as(err.toString()).isZero();
    return out.toString();
  }

  @Test
  void theTableRanksPartsAndGivesTheDrainLineOfThoseAtTheAlertScore() {
    String table = run("nodes", "--since", "7d", "--min-incidents", "2");

    assertThat(table.lines().toList()).containsSubsequence(
        "3 part(s) named in hangs; each job adds up to 1, halved every 14d; alert at 2.1",
        "  2.87     3      3  node17 cuda:3                gpu   2026-11-20T10:00:00Z  GPU_STALL \u00d73",
        "        ALERT culprit in 3 hangs of 3 jobs in 7 days, GPU_STALL \u00d73",
        "        scontrol update nodename=node17 state=drain reason=\"frdiag: node17 cuda:3 culprit in 3 hangs\"",
        "  0.50     1      1  node03 mlx5_3/1              port  2026-11-20T10:00:00Z  FABRIC \u00d71",
        "1 more (--limit)");
    assertThat(asked.get().getMinIncidents()).isEqualTo(2);
    long sevenDaysAgo = Instant.now().minus(Duration.ofDays(7)).toEpochMilli();
    assertThat(asked.get().getSinceMs()).isBetween(sevenDaysAgo - 60_000, sevenDaysAgo + 1);
  }

  @Test
  void jsonCarriesEachPartWithTheReportsThatNamedIt() throws Exception {
    JsonNode json = new ObjectMapper().readTree(run("nodes", "--json"));

    assertThat(asked.get().getSinceMs()).isZero();
    assertThat(json.get("alert_score").asDouble()).isEqualTo(2.1);
    JsonNode first = json.get("parts").get(0);
    assertThat(first.get("kind").asText()).isEqualTo("gpu");
    assertThat(first.get("host").asText()).isEqualTo("node17");
    assertThat(first.get("part").asText()).isEqualTo("cuda:3");
    assertThat(first.get("jobs").asInt()).isEqualTo(3);
    assertThat(first.get("symptoms").get("GPU_STALL").asInt()).isEqualTo(3);
    assertThat(first.get("drain").asText()).startsWith("scontrol update nodename=node17");
    assertThat(first.get("reports").get(0).get("report_id").asText()).isEqualTo("a-000001");
    assertThat(json.get("parts").get(1).has("drain")).isFalse();
  }
}
