package dev.frdiag.bench;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.StragglerAnalyzer;
import dev.frdiag.analysis.TimelineEvidence;
import dev.frdiag.evidence.EvidenceReader;
import dev.frdiag.evidence.ReadProgress;
import dev.frdiag.readers.kineto.KinetoTrace;
import dev.frdiag.readers.kineto.KinetoTraceReader;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Prints how fast profiler traces are read and what a large job's traces cost to analyse. Usage:
 *
 * <ul>
 *   <li>{@code TraceBench read [sizeMiB] [dir] [runs]}: one generated trace (200 MiB by default) read by
 *       {@link KinetoTraceReader} on one thread, each run paired with Jackson merely tokenizing the same file (the
 *       floor any streaming reader stands on), so a noisy machine moves both; prints MB/s per run and the medians.
 *   <li>{@code TraceBench job [ranks] [sizeMiB] [dir] [heap]}: generates {@code ranks} traces (64 × 200 MiB by
 *       default, rank {@value KinetoTraceGenerator#STRAGGLER} a straggler), then analyses the folder as
 *       {@code fr-diagnose analyze} does in a child JVM with {@code -Xmx<heap>} (1g), printing the wall time, MB/s,
 *       the heap's peak and the verdict.
 *   <li>{@code TraceBench analyze <dir>}: the child: reads and analyses, prints its figures.
 * </ul>
 */
public final class TraceBench {
  private static final JsonFactory JSON = JsonFactory.builder().build();

  private TraceBench() {}

  public static void main(String[] args) throws Exception {
    String what = args.length > 0 ? args[0] : "read";
    switch (what) {
      case "read" -> read(args.length > 1 ? Long.parseLong(args[1]) : 200,
          args.length > 2 ? Path.of(args[2]) : tmp(), args.length > 3 ? Integer.parseInt(args[3]) : 7);
      case "job" -> job(args.length > 1 ? Integer.parseInt(args[1]) : 64, args.length > 2 ? Long.parseLong(args[2])
          : 200, args.length > 3 ? Path.of(args[3]) : tmp(), args.length > 4 ? args[4] : "1g");
      case "analyze" -> analyze(Path.of(args[1]));
      default -> throw new IllegalArgumentException("usage: TraceBench read|job|analyze …");
    }
  }

  private static Path tmp() {
    return Path.of(System.getProperty("java.io.tmpdir"));
  }

  private static void read(long mib, Path dir, int runs) throws IOException {
    Path tmp = Files.createTempDirectory(dir, "trace-bench");
    Path file = tmp.resolve("rank3.pt.trace.json");
    try {
      long t0 = System.nanoTime();
      long bytes = KinetoTraceGenerator.write(file, 3, 64, mib << 20);
      System.out.printf("generated %s: %,d bytes in %.1f s%n", file, bytes, (System.nanoTime() - t0) / 1e9);
      List<Double> reader = new ArrayList<>();
      List<Double> tokens = new ArrayList<>();
      List<Double> ratio = new ArrayList<>();
      KinetoTraceReader r = KinetoTraceReader.create();
      for (int run = 0; run <= runs; run++) {
        long a = System.nanoTime();
        long n = tokenize(file);
        double tokenRate = bytes / 1e6 / ((System.nanoTime() - a) / 1e9);
        long b = System.nanoTime();
        KinetoTrace t = r.read(file);
        double readRate = bytes / 1e6 / ((System.nanoTime() - b) / 1e9);
        int collectives = t.ranks().get(0).collectives().size();
        if (run == 0) {
          System.out.printf("warm-up: %,d tokens; %d collectives, %,d kernels%n", n, collectives,
              t.ranks().get(0).compute().length / 2 + t.ranks().get(0).communication().length / 2);
          continue;
        }
        tokens.add(tokenRate);
        reader.add(readRate);
        ratio.add(readRate / tokenRate);
        System.out.printf("run %d: Jackson tokenizing %.0f MB/s, KinetoTraceReader %.0f MB/s (%.2f of it)%n", run,
            tokenRate, readRate, readRate / tokenRate);
      }
      System.out.printf("median of %d paired runs: KinetoTraceReader %.0f MB/s per core, Jackson tokenizing %.0f "
          + "MB/s, ratio %.2f; load average %.1f on %d cores%n", runs, median(reader), median(tokens),
          median(ratio), ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
          Runtime.getRuntime().availableProcessors());
    } finally {
      Files.deleteIfExists(file);
      Files.deleteIfExists(tmp);
    }
  }

  /** Every token of the file, nothing kept: what reading cannot go below. */
  private static long tokenize(Path file) throws IOException {
    long n = 0;
    try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16);
        JsonParser p = JSON.createParser(in)) {
      while (p.nextToken() != null) {
        n++;
      }
    }
    return n;
  }

  private static void job(int ranks, long mib, Path dir, String heap) throws Exception {
    Path tmp = Files.createTempDirectory(dir, "trace-job");
    try {
      long t0 = System.nanoTime();
      long total = KinetoTraceGenerator.writeJob(tmp, ranks, mib << 20);
      System.out.printf("generated %d traces, %,d bytes in all, in %.1f s%n", ranks, total,
          (System.nanoTime() - t0) / 1e9);
      String cp = System.getProperty("java.class.path");
      Process child = new ProcessBuilder("java", "-Xmx" + heap, "-Xms" + heap, "-XX:+UseSerialGC", "-cp", cp,
          TraceBench.class.getName(), "analyze", tmp.toString()).inheritIO().start();
      int code = child.waitFor();
      System.out.printf("child exit %d (-Xmx%s), load average %.1f on %d cores%n", code, heap,
          ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
          Runtime.getRuntime().availableProcessors());
    } finally {
      try (Stream<Path> files = Files.list(tmp)) {
        for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(f);
        }
      }
      Files.deleteIfExists(tmp);
    }
  }

  private static void analyze(Path dir) throws Exception {
    long bytes;
    try (Stream<Path> files = Files.list(dir)) {
      bytes = files.mapToLong(f -> f.toFile().length()).sum();
    }
    long t0 = System.nanoTime();
    EvidenceReader.Gathered g = EvidenceReader.builder().build().read(List.of(dir), ReadProgress.SILENT);
    long read = System.nanoTime();
    TimelineEvidence timelines = g.timelines().orElseThrow();
    Diagnosis d = StragglerAnalyzer.analyze(timelines);
    long analysed = System.nanoTime();
    long peak = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        peak += pool.getPeakUsage().getUsed();
      }
    }
    int collectives = timelines.ranks().stream().mapToInt(r -> r.collectives().size()).sum();
    System.out.printf(Locale.ROOT, "read %d traces (%,d bytes, %,d collectives) in %.1f s = %.0f MB/s on %d reading "
        + "threads; analysed in %.2f s; heap peak %d MiB of %d MiB%n", g.traceFiles(), bytes, collectives,
        (read - t0) / 1e9, bytes / 1e6 / ((read - t0) / 1e9), 2, (analysed - read) / 1e9, peak >> 20,
        Runtime.getRuntime().maxMemory() >> 20);
    System.out.println(d.verdict() + " " + d.symptom() + " " + d.culpritRanks() + ": " + d.headline());
    if (!d.culpritRanks().equals(List.of(KinetoTraceGenerator.STRAGGLER))) {
      throw new IllegalStateException("the analysis missed the generated straggler");
    }
  }

  private static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    return sorted.get(sorted.size() / 2);
  }
}
