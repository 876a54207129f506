package dev.frdiag.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.frdiag.cli.FrDiagnose;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Prints how long {@code fr-diagnose analyze} takes, and how much heap it needs, on folders of Flight Recorder
 * dumps as large jobs leave them: 64 and 512 ranks, 2000 entries each (PyTorch's default ring) with 73-frame
 * stacks, ≈287 MB of pickles at 512 ranks. The dumps are generated first (not timed); then the same code as
 * {@code fr-diagnose analyze} runs three times per folder. Each run prints its wall time, the process's CPU time
 * (the machines this runs on are shared and noisy), the read and analysis times from the report's timeline and
 * the peak heap; then the medians. Last, the analysis runs once more in fresh JVMs limited to {@code -Xmx500m}
 * and {@code -Xmx300m}, to show whether it fits. Every report must name the injected fault, so a fast wrong
 * answer cannot pass. Usage:
 * {@code java -cp bench/target/frdiag-bench.jar dev.frdiag.bench.AnalyzeBench [ranks...] [--dir DIR] [--keep]}.
 */
public final class AnalyzeBench {
  static final int RUNS = 3;
  static final int ENTRIES = 2000;
  /** Frames per entry: deep enough for the 512-rank folder to be the ≈287 MB reported in the issue. */
  static final int STACK_DEPTH = 73;
  /** The heap the target allows, and a tighter one that shows how much of it is needed. */
  static final List<String> HEAP_LIMITS = List.of("-Xmx500m", "-Xmx300m");
  private static final String CHILD = "--analyze-once";
  private static final String DONE = "analysed: exit";
  private static final Pattern TIMES =
      Pattern.compile("read (\\d+) dump files and \\d+ logs in (\\d+) ms; analysed (\\d+) ranks in (\\d+) ms");

  private AnalyzeBench() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals(CHILD)) {
      System.exit(analyzeOnce(Path.of(args[1])));
    }
    List<Integer> sizes = new ArrayList<>();
    Path base = Path.of(System.getProperty("java.io.tmpdir"));
    boolean keep = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--dir" -> base = Path.of(args[++i]);
        case "--keep" -> keep = true;
        default -> sizes.add(Integer.parseInt(args[i]));
      }
    }
    if (sizes.isEmpty()) {
      sizes = List.of(64, 512);
    }
    System.out.printf("java %s, %d cores, max heap %d MiB%n", System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(), Runtime.getRuntime().maxMemory() >> 20);
    // --dir names where the folders go: made when it does not exist yet.
    Files.createDirectories(base);
    for (int ranks : sizes) {
      Path dir = Files.createTempDirectory(base, "analyze-bench-" + ranks + "-");
      try {
        bench(ranks, dir);
      } finally {
        if (!keep) {
          delete(dir);
        } else {
          System.out.println("kept " + dir);
        }
      }
    }
  }

  /** Writes {@code ranks} dumps of {@link #ENTRIES} entries and {@link #STACK_DEPTH}-frame stacks, a GPU stall. */
  static BenchFolder.Written write(int ranks, Path dir) throws IOException {
    return BenchFolder.analyzeLayout(ranks, dir);
  }

  private static void bench(int ranks, Path dir) throws Exception {
    long t0 = System.nanoTime();
    BenchFolder.Written folder = write(ranks, dir);
    String expected = folder.expected();
    long bytes = folder.bytes();
    System.out.printf("%n%d ranks x %d entries, %d-frame stacks: %.1f MB of pickles in %s (generated in %.1f s); "
        + "injected %s%n", ranks, ENTRIES, STACK_DEPTH, bytes / 1e6, dir, (System.nanoTime() - t0) / 1e9, expected);
    System.gc();
    System.out.printf("%4s %10s %10s %10s %12s %14s  %s%n", "run", "wall ms", "cpu ms", "read ms", "analyse ms",
        "peak heap MiB", "verdict");
    long[] walls = new long[RUNS];
    long[] cpus = new long[RUNS];
    long[] peaks = new long[RUNS];
    for (int run = 0; run < RUNS; run++) {
      System.gc();
      resetPeaks();
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      long cpuStart = processCpuNanos();
      long start = System.nanoTime();
      int code = FrDiagnose.run(new String[] {"analyze", "-q", "--json", dir.toString()}, new PrintWriter(out),
          new PrintWriter(err));
      walls[run] = System.nanoTime() - start;
      cpus[run] = processCpuNanos() - cpuStart;
      peaks[run] = peakHeap();
      JsonNode report = new ObjectMapper().readTree(out.toString());
      String verdict = report.get("verdict").asText() + " " + report.get("symptom").asText() + " "
          + report.get("culprit_ranks").toString().replace(",", ", ");
      if (code != 1 || !verdict.equals(expected)) {
        throw new IllegalStateException("wrong answer: exit " + code + ", " + verdict + ", expected " + expected
            + "\n" + err);
      }
      Matcher m = TIMES.matcher(out.toString());
      if (!m.find()) {
        throw new IllegalStateException("no timing line in the report");
      }
      System.out.printf("%4d %10.0f %10.0f %10s %12s %14d  %s%n", run + 1, walls[run] / 1e6, cpus[run] / 1e6,
          m.group(2), m.group(4), peaks[run] >> 20, verdict);
    }
    Arrays.sort(walls);
    Arrays.sort(cpus);
    Arrays.sort(peaks);
    System.out.printf("median of %d: %.0f ms wall, %.0f ms cpu, peak heap %d MiB (%d ranks)%n", RUNS,
        walls[RUNS / 2] / 1e6, cpus[RUNS / 2] / 1e6, peaks[RUNS / 2] >> 20, ranks);
    for (String limit : HEAP_LIMITS) {
      limitedHeap(dir, limit);
    }
  }

  /** The same analysis in a fresh JVM whose heap is limited to {@code limit}. */
  private static void limitedHeap(Path dir, String limit) throws IOException, InterruptedException {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process p = new ProcessBuilder(java.toString(), limit, "-cp", System.getProperty("java.class.path"),
        AnalyzeBench.class.getName(), CHILD, dir.toString()).redirectErrorStream(true).start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    if (!p.waitFor(10, TimeUnit.MINUTES)) {
      p.destroyForcibly();
    }
    boolean completed = output.startsWith(DONE) && p.exitValue() == 1;
    System.out.printf("fresh JVM with %s: %s%n", limit, completed ? "completed, " + output
        : "FAILED (exit " + p.exitValue() + "): " + output.lines().limit(3).reduce((a, b) -> a + " / " + b)
            .orElse(""));
  }

  /** Child mode: one analysis, its exit code and wall time. */
  private static int analyzeOnce(Path dir) {
    long start = System.nanoTime();
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDiagnose.run(new String[] {"analyze", "-q", dir.toString()}, new PrintWriter(out),
        new PrintWriter(err));
    System.out.printf("%s %d in %.0f ms (cold JVM) %s%n", DONE, code, (System.nanoTime() - start) / 1e6,
        err.toString().strip());
    return code;
  }

  /** CPU time of the whole process (every thread, the garbage collector's too), which a busy machine inflates less. */
  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  private static void resetPeaks() {
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      pool.resetPeakUsage();
    }
  }

  /** The sum of the heap pools' peaks since the reset: an upper bound of the heap the run needed at once. */
  private static long peakHeap() {
    long sum = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        sum += pool.getPeakUsage().getUsed();
      }
    }
    return sum;
  }

  static long size(Path p) {
    try {
      return Files.size(p);
    } catch (IOException e) {
      return 0;
    }
  }

  static void delete(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
