package dev.frdiag.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.frdiag.daemon.Daemon;
import dev.frdiag.daemon.fleet.Fleet;
import dev.frdiag.daemon.fleet.FleetSettings;
import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.demo.FrDemo;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

/**
 * Prints how long a daemon takes to read its stored reports at start, and what fleet memory adds: N reports
 * (default 100,000: 2,000 jobs of 50, GPU stalls and fabric hangs from real {@code fr-demo} reports, on 1,024 hosts,
 * over 60 days) are written to a data dir, then each paired run loads the store alone, rebuilds fleet memory from
 * it, and starts a whole daemon on it, in alternating order, with the machine's load before each. Before the pairs,
 * it removes the store's summary index and loads the store once without it (every report read whole). Usage:
 * {@code java -Xmx8g -cp bench/target/frdiag-bench.jar dev.frdiag.bench.StoreStartBench [reports] [pairs] [dir]};
 * a {@code dir} given is kept, and its reports are read again by the next run instead of written anew.
 */
public final class StoreStartBench {
  static final int REPORTS_PER_JOB = 50;
  static final int HOSTS = 1024;

  private StoreStartBench() {}

  public static void main(String[] args) throws Exception {
    int reports = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    int pairs = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    Path dir = args.length > 2 ? Path.of(args[2]) : Files.createTempDirectory("frdiag-store-bench");
    if (Files.isDirectory(dir.resolve("reports"))) {
      System.out.printf("reading the reports already under %s%n", dir);
    } else {
      long t0 = System.nanoTime();
      long bytes = generate(dir, reports);
      System.out.printf("wrote %d reports (%d MB of JSON) under %s in %.1f s%n", reports, bytes >> 20, dir,
          (System.nanoTime() - t0) / 1e9);
    }
    // The summary index is what a start reads; without it (a data dir from before it existed, or one whose index
    // was removed) the store reads every report whole once and writes the index anew.
    Path index = dir.resolve("reports").resolve("summaries.jsonl");
    Files.deleteIfExists(index);
    long t0 = System.nanoTime();
    int indexed = new ReportStore(dir).jobs().size();
    System.out.printf("load1 %s: store load with no summary index (reads every report whole, writes the index): "
        + "%.2f s, %d jobs, index %d MB%n", Files.readString(Path.of("/proc/loadavg")).split(" ")[0],
        (System.nanoTime() - t0) / 1e9, indexed, Files.size(index) >> 20);
    List<Double> store = new ArrayList<>();
    List<Double> fleet = new ArrayList<>();
    List<Double> daemon = new ArrayList<>();
    System.out.printf("%4s %8s %12s %12s %12s %8s %12s %14s%n", "pair", "load1", "store s", "fleet s", "daemon s",
        "parts", "store MB", "fleet MB");
    for (int pair = 1; pair <= pairs; pair++) {
      String load = Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
      double[] storeAndFleet = null;
      double whole;
      if (pair % 2 == 1) {
        storeAndFleet = storeThenFleet(dir);
        whole = daemonStart(dir);
      } else {
        whole = daemonStart(dir);
        storeAndFleet = storeThenFleet(dir);
      }
      store.add(storeAndFleet[0]);
      fleet.add(storeAndFleet[1]);
      daemon.add(whole);
      System.out.printf("%4d %8s %12.2f %12.3f %12.2f %8d %12d %14d%n", pair, load, storeAndFleet[0],
          storeAndFleet[1], whole, (long) storeAndFleet[2], (long) storeAndFleet[3], (long) storeAndFleet[4]);
    }
    System.out.printf("median of %d pairs, %d reports: store %.2f s, fleet rebuild %.3f s, whole daemon start %.2f s"
        + " (%d cores)%n", pairs, reports, median(store), median(fleet), median(daemon),
        Runtime.getRuntime().availableProcessors());
    if (args.length <= 2) {
      delete(dir);
    }
  }

  /** Seconds to load the store, seconds to rebuild fleet memory from it, parts, store MB, fleet MB. */
  private static double[] storeThenFleet(Path dir) {
    long before = usedAfterGc();
    long t0 = System.nanoTime();
    ReportStore store = new ReportStore(dir);
    double storeSeconds = (System.nanoTime() - t0) / 1e9;
    long withStore = usedAfterGc();
    long t1 = System.nanoTime();
    Fleet fleet = new Fleet(FleetSettings.defaults(), Clock.systemUTC()).rebuild(store);
    double fleetSeconds = (System.nanoTime() - t1) / 1e9;
    long withFleet = usedAfterGc();
    int parts = fleet.parts();
    // Both held until measured.
    if (store.jobs().isEmpty() && parts < 0) {
      throw new IllegalStateException();
    }
    return new double[] {storeSeconds, fleetSeconds, parts, (withStore - before) >> 20, (withFleet - withStore) >> 20};
  }

  /** Seconds from constructing a daemon on the data dir to its serving (no metrics or web port). */
  private static double daemonStart(Path dir) {
    long t0 = System.nanoTime();
    try (Daemon d = new Daemon(DaemonSettings.builder().port(0).dataDir(dir).build()).start()) {
      return (System.nanoTime() - t0) / 1e9;
    }
  }

  private static long usedAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    Runtime rt = Runtime.getRuntime();
    return rt.totalMemory() - rt.freeMemory();
  }

  /** Writes {@code reports} report files as the store keeps them, from real demo reports; returns the bytes. */
  static long generate(Path dir, int reports) throws Exception {
    ObjectMapper json = new ObjectMapper();
    List<ObjectNode> templates = List.of(demoReport(json, "gpu-stall"), demoReport(json, "fabric"));
    Random random = new Random(42);
    Instant now = Instant.now();
    long bytes = 0;
    for (int i = 0; i < reports; i++) {
      String job = String.format("job%05d", i / REPORTS_PER_JOB);
      String id = String.format("%s-%06d", job, i % REPORTS_PER_JOB + 1);
      // One in five a fabric hang, the rest GPU stalls; a few hosts fail far more often than the rest.
      ObjectNode r = templates.get(random.nextInt(5) == 0 ? 1 : 0).deepCopy();
      r.put("report_id", id);
      r.put("job", job);
      r.put("created_at", now.minus(Duration.ofSeconds(random.nextInt(60 * 86_400))).toString());
      String hostA = host(random);
      String hostB = host(random);
      String text = json.writeValueAsString(r).replace("node00", hostA).replace("node01",
          hostB.equals(hostA) ? host(random) : hostB);
      Path jobDir = dir.resolve("reports").resolve(job);
      if (i % REPORTS_PER_JOB == 0) {
        Files.createDirectories(jobDir);
      }
      Files.writeString(jobDir.resolve(id + ".json"), text);
      bytes += text.length();
    }
    return bytes;
  }

  private static String host(Random random) {
    int h = random.nextInt(8) == 0 ? random.nextInt(16) : random.nextInt(HOSTS);
    return String.format("node%04d", h);
  }

  private static ObjectNode demoReport(ObjectMapper json, String fault) throws IOException {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = FrDemo.run(new String[] {"--fault", fault, "--rank", "3", "--json"}, new PrintWriter(out),
        new PrintWriter(err));
    if (code != 0) {
      throw new IllegalStateException("fr-demo --fault " + fault + " exited " + code + ": " + err);
    }
    return (ObjectNode) json.readTree(out.toString());
  }

  private static double median(List<Double> values) {
    List<Double> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    return sorted.get(sorted.size() / 2);
  }

  private static void delete(Path dir) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
