package dev.frdiag.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * Times {@code fr-diagnose analyze} and PyTorch's own analyzer, {@code fr_trace}, side by side on the same folders
 * of Flight Recorder dumps ({@link BenchFolder}), as separate processes: wall time from start to exit (start-up
 * included) and peak resident memory ({@code VmHWM}, sampled until the process ends). Runs are paired: fr_trace,
 * then fr-diagnose, on the same folder, so both see the same machine; the medians of the runs and the median of
 * the pairs' ratios are printed with the load average before and after each folder. fr-diagnose must give the
 * folder's verdict or the bench fails; of fr_trace it prints how far its matching got: whether it matched every
 * entry of the rings or gave up (it stops after too many mismatches in one group), and after how many.
 *
 * <p>fr_trace runs from torch's own sources with Python's standard library only: the files of
 * {@code torch/distributed/flight_recorder} are copied beside empty {@code torch/__init__.py} and
 * {@code torch/distributed/__init__.py}, taken from {@code --fr-trace} (a torch wheel, or a folder holding
 * {@code torch/distributed/flight_recorder}: a PyTorch checkout or a site-packages), else from the real-PyTorch
 * suite's venv ({@code pytorch-suite/target/torch-venv}), else from a torch wheel in pip's {@code find-links}
 * folders. It runs as {@code python3 -m torch.distributed.flight_recorder.fr_trace DIR} does, through a wrapper
 * that counts the entries its matcher consumed ({@code fr_trace_counted.py}). Nothing of torch is part of this
 * project. Usage: {@code java -cp bench/target/frdiag-bench.jar dev.frdiag.bench.FrTraceBench [--fr-trace
 * WHEEL_OR_DIR] [--fr-diagnose bin/fr-diagnose] [--runs 3] [--dir DIR] [folder...]}, folders named as in
 * {@link BenchFolder} (default: the six rows of {@link BenchFolder#DEFAULT_ROWS}).
 */
public final class FrTraceBench {
  private static final long SAMPLE_MILLIS = 5;
  private static final String FLIGHT_RECORDER = "torch/distributed/flight_recorder/";
  private static final String WRAPPER = "fr_trace_counted.py";
  private static final Pattern COUNTS =
      Pattern.compile("fr_trace-bench: entries=(\\d+) consumed=(\\d+) left=(\\d+) collectives=(\\d+) passed=(\\d+)");

  private FrTraceBench() {}

  /** One finished process: how long it ran, its peak resident set, its exit code and what it printed. */
  record Run(long wallNanos, long peakKib, int exit, String out) {}

  /** How far fr_trace's matching got on a folder. */
  record Progress(long entries, long consumed, long collectives, long passed) {
    boolean gaveUp() {
      return consumed < entries;
    }

    @Override
    public String toString() {
      return gaveUp()
          ? String.format("gave up after %,d of %,d entries (%.1f%%), %,d collectives", consumed, entries,
              100.0 * consumed / entries, collectives)
          : String.format("matched the whole ring: %,d entries into %,d collectives (%,d passed its checks)",
              entries, collectives, passed);
    }
  }

  public static void main(String[] args) throws Exception {
    Optional<Path> frTrace = Optional.empty();
    Path frDiagnose = Path.of("bin/fr-diagnose");
    Path base = Path.of(System.getProperty("java.io.tmpdir"));
    int runs = 3;
    List<BenchFolder> folders = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--fr-trace" -> frTrace = Optional.of(Path.of(args[++i]));
        case "--fr-diagnose" -> frDiagnose = Path.of(args[++i]);
        case "--runs" -> runs = Integer.parseInt(args[++i]);
        case "--dir" -> base = Path.of(args[++i]);
        default -> folders.add(BenchFolder.of(args[i]));
      }
    }
    if (!Files.isExecutable(frDiagnose)) {
      System.err.println("FrTraceBench: " + frDiagnose + " is not an executable fr-diagnose launcher; build it with "
          + "mvn -q -DskipTests package");
      System.exit(2);
    }
    if (folders.isEmpty()) {
      folders = BenchFolder.DEFAULT_ROWS;
    }
    Files.createDirectories(base);
    Path tree = Files.createTempDirectory(base, "fr-trace-sources-");
    try {
      String from = copySources(frTrace, tree);
      System.out.printf("%d cores; fr_trace from %s; fr-diagnose %s; %d paired runs per folder%n",
          Runtime.getRuntime().availableProcessors(), from, frDiagnose, runs);
      List<String> summary = new ArrayList<>();
      for (BenchFolder folder : folders) {
        Path dir = Files.createTempDirectory(base, "fr-trace-bench-" + folder.id + "-");
        try {
          summary.add(compare(folder, dir, tree, frDiagnose, runs));
        } finally {
          AnalyzeBench.delete(dir);
        }
      }
      System.out.println();
      System.out.println("| folder | fr_trace | `fr-diagnose analyze` | time ratio | memory ratio | fr_trace's matching |");
      System.out.println("|---|---|---|---|---|---|");
      summary.forEach(System.out::println);
    } finally {
      AnalyzeBench.delete(tree);
    }
  }

  private static String compare(BenchFolder folder, Path dir, Path tree, Path frDiagnose, int runs)
      throws Exception {
    long t0 = System.nanoTime();
    BenchFolder.Written written = folder.write(dir);
    System.out.printf("%n%s (%s): %d ranks x %d entries, %.1f MB of pickles, written in %.1f s; expected %s%n",
        folder.id, folder.description, folder.ranks, BenchFolder.ENTRIES, written.bytes() / 1e6,
        (System.nanoTime() - t0) / 1e9, written.expected());
    String loadBefore = load();
    System.out.printf("load average before: %s%n", loadBefore);
    System.out.printf("%4s %12s %13s %15s %16s %8s%n", "run", "fr_trace s", "fr_trace MiB", "fr-diagnose s",
        "fr-diagnose MiB", "ratio");
    long[] traceWall = new long[runs];
    long[] traceRss = new long[runs];
    long[] oursWall = new long[runs];
    long[] oursRss = new long[runs];
    double[] ratios = new double[runs];
    Progress progress = null;
    for (int r = 0; r < runs; r++) {
      ProcessBuilder python = new ProcessBuilder("python3", tree.resolve(WRAPPER).toString(), dir.toString())
          .directory(tree.toFile());
      python.environment().put("PYTHONPATH", tree.toAbsolutePath().toString());
      Run trace = run(python);
      Matcher m = COUNTS.matcher(trace.out());
      if (trace.exit() != 0 || !m.find()) {
        throw new IllegalStateException("fr_trace exited " + trace.exit() + ":\n" + tail(trace.out()));
      }
      progress = new Progress(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(4)),
          Long.parseLong(m.group(5)));
      Run ours = run(new ProcessBuilder(frDiagnose.toString(), "analyze", "-q", "--json", dir.toString()));
      int json = ours.out().indexOf('{');
      JsonNode report = json < 0 ? null : new ObjectMapper().readTree(ours.out().substring(json));
      String verdict = report == null ? "no report" : report.path("verdict").asText() + " "
          + report.path("symptom").asText() + " " + report.path("culprit_ranks").toString().replace(",", ", ");
      boolean hang = written.expected().startsWith("HANG");
      if (ours.exit() != (hang ? 1 : 0) || !written.expected().equals(verdict)) {
        throw new IllegalStateException("fr-diagnose: exit " + ours.exit() + ", " + verdict + ", expected "
            + written.expected() + "\n" + tail(ours.out()));
      }
      traceWall[r] = trace.wallNanos();
      traceRss[r] = trace.peakKib();
      oursWall[r] = ours.wallNanos();
      oursRss[r] = ours.peakKib();
      ratios[r] = (double) trace.wallNanos() / ours.wallNanos();
      System.out.printf("%4d %12.2f %13d %15.2f %16d %7.1fx%n", r + 1, trace.wallNanos() / 1e9,
          trace.peakKib() >> 10, ours.wallNanos() / 1e9, ours.peakKib() >> 10, ratios[r]);
    }
    String loadAfter = load();
    double traceTime = median(traceWall) / 1e9;
    double oursTime = median(oursWall) / 1e9;
    long traceMem = median(traceRss) >> 10;
    long oursMem = median(oursRss) >> 10;
    double ratio = median(ratios);
    System.out.printf("load average after: %s%n", loadAfter);
    System.out.printf("median of %d (%s): fr_trace %.2f s, %d MiB; fr-diagnose %.2f s, %d MiB; median ratio %.1fx, "
        + "memory %.2fx; fr_trace %s%n", runs, folder.id, traceTime, traceMem, oursTime, oursMem, ratio,
        (double) oursMem / traceMem, progress);
    return String.format("| %s, %d paired runs, load %s → %s | %.2f s, %d MiB | %.2f s, %d MiB | %.1f× | %.2f× | %s |",
        folder.description, runs, loadBefore.split(" ")[0], loadAfter.split(" ")[0], traceTime, traceMem, oursTime,
        oursMem, ratio, (double) oursMem / traceMem, progress);
  }

  /**
   * Copies fr_trace's sources into {@code tree} (beside empty package files for {@code torch} and
   * {@code torch.distributed}, so that Python's standard library is all they load) with the counting wrapper.
   *
   * @return where they came from
   */
  static String copySources(Optional<Path> given, Path tree) throws IOException, InterruptedException {
    Path source = given.isPresent() ? given.get() : findSources();
    Path target = tree.resolve(FLIGHT_RECORDER);
    Files.createDirectories(target.resolve("components"));
    if (Files.isRegularFile(source) && source.toString().endsWith(".whl")) {
      try (ZipFile wheel = new ZipFile(source.toFile())) {
        for (ZipEntry e : wheel.stream().toList()) {
          if (e.getName().startsWith(FLIGHT_RECORDER) && e.getName().endsWith(".py")) {
            try (InputStream in = wheel.getInputStream(e)) {
              Files.copy(in, tree.resolve(e.getName()), StandardCopyOption.REPLACE_EXISTING);
            }
          }
        }
      }
    } else {
      Path from = source.resolve(FLIGHT_RECORDER);
      if (!Files.isRegularFile(from.resolve("fr_trace.py"))) {
        throw new IllegalArgumentException(source + " holds no " + FLIGHT_RECORDER + "fr_trace.py: give --fr-trace a "
            + "torch wheel, a PyTorch checkout or a site-packages folder with torch");
      }
      try (Stream<Path> files = Files.walk(from)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".py")).toList()) {
          Files.copy(f, target.resolve(from.relativize(f).toString()), StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
    if (!Files.isRegularFile(target.resolve("fr_trace.py"))) {
      throw new IllegalArgumentException(source + " holds no " + FLIGHT_RECORDER + "fr_trace.py");
    }
    Files.writeString(tree.resolve("torch/__init__.py"), "");
    Files.writeString(tree.resolve("torch/distributed/__init__.py"), "");
    try (InputStream wrapper = FrTraceBench.class.getResourceAsStream(WRAPPER)) {
      Files.copy(wrapper, tree.resolve(WRAPPER), StandardCopyOption.REPLACE_EXISTING);
    }
    return source.toString();
  }

  /** The real-PyTorch suite's venv, else a torch wheel in one of pip's find-links folders. */
  private static Path findSources() throws IOException, InterruptedException {
    Path venvLib = Path.of("pytorch-suite", "target", "torch-venv", "lib");
    if (Files.isDirectory(venvLib)) {
      try (Stream<Path> pythons = Files.list(venvLib)) {
        for (Path python : pythons.sorted().toList()) {
          Path site = python.resolve("site-packages");
          if (Files.isRegularFile(site.resolve(FLIGHT_RECORDER).resolve("fr_trace.py"))) {
            return site;
          }
        }
      }
    }
    Process pip = new ProcessBuilder("python3", "-m", "pip", "config", "list").redirectErrorStream(true).start();
    String config = new String(pip.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    pip.waitFor(1, TimeUnit.MINUTES);
    Matcher m = Pattern.compile("find-links='([^']*)'").matcher(config);
    while (m.find()) {
      for (String folder : m.group(1).split("\\s+")) {
        Path dir = Path.of(folder);
        if (!Files.isDirectory(dir)) {
          continue;
        }
        try (Stream<Path> wheels = Files.list(dir)) {
          Optional<Path> torch = wheels.filter(p -> p.getFileName().toString().matches("torch-[0-9].*\\.whl"))
              .sorted().reduce((a, b) -> b);
          if (torch.isPresent()) {
            return torch.get();
          }
        }
      }
    }
    throw new IllegalArgumentException("no torch found: give --fr-trace a torch wheel or a folder holding "
        + FLIGHT_RECORDER + " (the real-PyTorch suite's venv has one once its tests ran)");
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
        p.waitFor(SAMPLE_MILLIS, TimeUnit.MILLISECONDS);
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

  private static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  static String load() throws IOException {
    return Files.readString(Path.of("/proc/loadavg")).trim();
  }

  private static String tail(String text) {
    return text.length() <= 2000 ? text : text.substring(text.length() - 2000);
  }
}
