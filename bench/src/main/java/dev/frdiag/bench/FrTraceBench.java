package dev.frdiag.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Times {@code fr-diagnose analyze} and PyTorch's own analyzer, {@code fr_trace}, side by side on the same
 * folders of Flight Recorder dumps, in one run, as separate processes started the way a user starts them: wall
 * time from start to exit (start-up included) and peak resident memory ({@code VmHWM}, sampled until the process
 * ends). The two alternate, run by run, so both see the same machine. The folders are those of
 * {@link AnalyzeBench} (2000 entries per rank, 73-frame stacks, a GPU stall); fr-diagnose must name the injected
 * rank or the bench fails. fr_trace runs from a PyTorch source tree with Python's standard library only
 * ({@code python3 -m torch.distributed.flight_recorder.fr_trace DIR} with that tree first on the path); nothing of
 * it is part of this project. Usage:
 * {@code java -cp bench/target/frdiag-bench.jar dev.frdiag.bench.FrTraceBench --fr-trace PYTORCH_SRC
 * [--fr-diagnose bin/fr-diagnose] [--runs 3] [--dir DIR] [ranks...]}.
 */
public final class FrTraceBench {
  private static final long SAMPLE_MILLIS = 5;

  private FrTraceBench() {}

  /** One finished process: how long it ran, its peak resident set, its exit code and what it printed. */
  record Run(long wallNanos, long peakKib, int exit, String out) {}

  public static void main(String[] args) throws Exception {
    Path frTrace = null;
    Path frDiagnose = Path.of("bin/fr-diagnose");
    Path base = Path.of(System.getProperty("java.io.tmpdir"));
    int runs = 3;
    List<Integer> sizes = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--fr-trace" -> frTrace = Path.of(args[++i]);
        case "--fr-diagnose" -> frDiagnose = Path.of(args[++i]);
        case "--runs" -> runs = Integer.parseInt(args[++i]);
        case "--dir" -> base = Path.of(args[++i]);
        default -> sizes.add(Integer.parseInt(args[i]));
      }
    }
    if (frTrace == null || !Files.isRegularFile(frTrace.resolve("torch/distributed/flight_recorder/fr_trace.py"))) {
      System.err.println("FrTraceBench: --fr-trace must name a PyTorch source tree holding "
          + "torch/distributed/flight_recorder/fr_trace.py, got " + frTrace);
      System.exit(2);
    }
    if (!Files.isExecutable(frDiagnose)) {
      System.err.println("FrTraceBench: " + frDiagnose + " is not an executable fr-diagnose launcher; build it with "
          + "mvn -q -DskipTests package");
      System.exit(2);
    }
    if (sizes.isEmpty()) {
      sizes = List.of(64, 512);
    }
    System.out.printf("%d cores; load average at start: %s%n", Runtime.getRuntime().availableProcessors(), load());
    for (int ranks : sizes) {
      Path dir = Files.createTempDirectory(base, "fr-trace-bench-" + ranks + "-");
      try {
        compare(ranks, dir, frTrace, frDiagnose, runs);
      } finally {
        AnalyzeBench.delete(dir);
      }
    }
    System.out.printf("load average at end: %s%n", load());
  }

  private static void compare(int ranks, Path dir, Path frTrace, Path frDiagnose, int runs) throws Exception {
    AnalyzeBench.Folder folder = AnalyzeBench.write(ranks, dir);
    String expected = folder.expected();
    long bytes = folder.bytes();
    System.out.printf("%n%d ranks x %d entries: %.1f MB of pickles; injected %s%n", ranks, AnalyzeBench.ENTRIES,
        bytes / 1e6, expected);
    System.out.printf("%4s %14s %14s %16s %16s%n", "run", "fr_trace s", "fr_trace MiB", "fr-diagnose s",
        "fr-diagnose MiB");
    long[] traceWall = new long[runs];
    long[] traceRss = new long[runs];
    long[] oursWall = new long[runs];
    long[] oursRss = new long[runs];
    for (int r = 0; r < runs; r++) {
      ProcessBuilder python = new ProcessBuilder("python3", "-m", "torch.distributed.flight_recorder.fr_trace",
          dir.toString()).directory(frTrace.toFile());
      python.environment().put("PYTHONPATH", frTrace.toAbsolutePath().toString());
      Run trace = run(python);
      if (trace.exit() != 0) {
        throw new IllegalStateException("fr_trace exited " + trace.exit() + ":\n" + tail(trace.out()));
      }
      Run ours = run(new ProcessBuilder(frDiagnose.toString(), "analyze", "-q", "--json", dir.toString()));
      JsonNode report = new ObjectMapper().readTree(ours.out().substring(ours.out().indexOf('{')));
      String verdict = report.get("symptom").asText() + " " + report.get("culprit_ranks").toString().replace(",", ", ");
      if (ours.exit() != 1 || !verdict.equals(expected)) {
        throw new IllegalStateException("fr-diagnose: exit " + ours.exit() + ", " + verdict + ", expected "
            + expected);
      }
      traceWall[r] = trace.wallNanos();
      traceRss[r] = trace.peakKib();
      oursWall[r] = ours.wallNanos();
      oursRss[r] = ours.peakKib();
      System.out.printf("%4d %14.2f %14d %16.2f %16d%n", r + 1, trace.wallNanos() / 1e9, trace.peakKib() >> 10,
          ours.wallNanos() / 1e9, ours.peakKib() >> 10);
    }
    double traceTime = median(traceWall) / 1e9;
    double oursTime = median(oursWall) / 1e9;
    long traceMem = median(traceRss) >> 10;
    long oursMem = median(oursRss) >> 10;
    System.out.printf("median of %d (%d ranks): fr_trace %.2f s, %d MiB; fr-diagnose %.2f s, %d MiB; "
        + "fr-diagnose is %.1fx faster and uses %.2fx fr_trace's peak memory%n", runs, ranks, traceTime, traceMem,
        oursTime, oursMem, traceTime / oursTime, (double) oursMem / traceMem);
  }

  /** Runs {@code pb} to its end, sampling its peak resident set while it runs. */
  static Run run(ProcessBuilder pb) throws IOException, InterruptedException {
    Path out = Files.createTempFile("fr-trace-bench-", ".out");
    try {
      pb.redirectErrorStream(true).redirectOutput(out.toFile());
      long start = System.nanoTime();
      Process p = pb.start();
      Path status = Path.of("/proc", Long.toString(p.pid()), "status");
      long peak = 0;
      while (p.isAlive()) {
        peak = Math.max(peak, highWaterMark(status));
        p.waitFor(SAMPLE_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS);
      }
      long wall = System.nanoTime() - start;
      return new Run(wall, peak, p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
    }
  }

  /** VmHWM in KiB, or 0 once the process is gone; it only ever grows while the process lives. */
  private static long highWaterMark(Path status) {
    try {
      for (String line : Files.readAllLines(status)) {
        if (line.startsWith("VmHWM:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException | RuntimeException e) {
      // The process ended between two samples.
    }
    return 0;
  }

  private static long median(long[] values) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static String load() throws IOException {
    return Files.readString(Path.of("/proc/loadavg")).trim();
  }

  private static String tail(String text) {
    return text.length() <= 2000 ? text : text.substring(text.length() - 2000);
  }
}
