package dev.frdiag.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.frdiag.demo.FrDemo;
import dev.frdiag.report.ReportDraft;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Prints how fast an incident becomes a report on disk, through the same path a user runs ({@code fr-demo}: an
 * embedded daemon, simulated ranks streaming over loopback gRPC, an injected GPU stall). For each run it reads the
 * report's timeline: stall detected → report written, and first divergence → report written. Usage:
 * {@code java -cp bench/target/frdiag-bench.jar dev.frdiag.bench.IncidentBench [ranks] [runs] [fault]}.
 */
public final class IncidentBench {
  private IncidentBench() {}

  public static void main(String[] args) throws Exception {
    int ranks = args.length > 0 ? Integer.parseInt(args[0]) : 1024;
    int runs = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    String fault = args.length > 2 ? args[2] : "gpu-stall";
    List<Long> detectToDisk = new ArrayList<>();
    List<Long> divergeToDisk = new ArrayList<>();
    System.out.printf("%4s %8s %-10s %-10s %-12s %22s %24s%n", "run", "ranks", "fault", "symptom", "culprits",
        "detected->on disk ms", "divergence->on disk ms");
    for (int run = 1; run <= runs; run++) {
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      int rank = ranks / 2 + 1;
      int code = FrDemo.run(new String[] {"--ranks", Integer.toString(ranks), "--fault", fault, "--rank",
          Integer.toString(rank), "--json"}, new PrintWriter(out), new PrintWriter(err));
      if (code != 0) {
        System.out.println("run " + run + " failed: " + err);
        continue;
      }
      JsonNode report = new ObjectMapper().readTree(out.toString());
      Instant written = Instant.parse(report.get("created_at").asText());
      Instant detected = null;
      Instant diverged = null;
      for (JsonNode t : report.get("timeline")) {
        String event = t.get("event").asText();
        if (event.startsWith("stall detected") || event.startsWith("rank lost")) {
          detected = Instant.parse(t.get("at").asText());
        } else if (event.startsWith(ReportDraft.FIRST_DIVERGENCE)) {
          diverged = Instant.parse(t.get("at").asText());
        }
      }
      long d2d = detected == null ? -1 : Duration.between(detected, written).toMillis();
      long v2d = diverged == null ? -1 : Duration.between(diverged, written).toMillis();
      detectToDisk.add(d2d);
      divergeToDisk.add(v2d);
      System.out.printf("%4d %8d %-10s %-10s %-12s %22d %24d%n", run, ranks, fault, report.get("symptom").asText(),
          report.get("culprit_ranks").toString(), d2d, v2d);
    }
    System.out.printf("median detected->on disk: %d ms; median first divergence->on disk: %d ms (%d runs)%n",
        median(detectToDisk), median(divergeToDisk), detectToDisk.size());
  }

  private static long median(List<Long> values) {
    if (values.isEmpty()) {
      return -1;
    }
    List<Long> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    return sorted.get(sorted.size() / 2);
  }
}
