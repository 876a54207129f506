package dev.frdiag.bench;

import dev.frdiag.readers.nccl.NcclEvent;
import dev.frdiag.readers.nccl.NcclLog;
import dev.frdiag.readers.nccl.NcclLogParser;
import dev.frdiag.readers.nccl.OpCountProgress;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Prints how fast {@link NcclLogParser} reads a large NCCL log: generates one (1 GiB by default) under a temporary
 * directory, parses it three times and prints MB/s per run and the median, then checks the result found what the
 * generator put in (the laggard rank, the status-12 cause). Usage:
 * {@code java -cp bench/target/frdiag-bench.jar dev.frdiag.bench.NcclLogBench [sizeMiB] [dir]}.
 */
public final class NcclLogBench {
  private static final int RUNS = 3;

  private NcclLogBench() {}

  public static void main(String[] args) throws IOException {
    long mib = args.length > 0 ? Long.parseLong(args[0]) : 1024;
    Path dir = args.length > 1 ? Path.of(args[1]) : Path.of(System.getProperty("java.io.tmpdir"));
    Path tmp = Files.createTempDirectory(dir, "nccl-bench");
    Path file = tmp.resolve("nccl.log");
    try {
      long t0 = System.nanoTime();
      long bytes = NcclLogGenerator.write(file, mib << 20, 42);
      System.out.printf("generated %s: %,d bytes in %.1f s%n", file, bytes, (System.nanoTime() - t0) / 1e9);
      NcclLogParser parser = NcclLogParser.create();
      List<Double> rates = new ArrayList<>();
      NcclLog log = null;
      for (int run = 1; run <= RUNS; run++) {
        long start = System.nanoTime();
        log = parser.parse(file);
        double seconds = (System.nanoTime() - start) / 1e9;
        double rate = bytes / 1e6 / seconds;
        rates.add(rate);
        System.out.printf("run %d: %,d lines in %.2f s = %.0f MB/s%n", run, log.lineCount(), seconds, rate);
      }
      Collections.sort(rates);
      System.out.printf("median of %d: %.0f MB/s (%,d bytes, heap used %d MiB)%n", RUNS, rates.get(RUNS / 2), bytes,
          (Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory()) >> 20);
      check(log);
    } finally {
      Files.deleteIfExists(file);
      Files.deleteIfExists(tmp);
    }
  }

  /** Fails loudly when the parse missed what the generator wrote, so a fast wrong parser cannot pass. */
  private static void check(NcclLog log) {
    List<OpCountProgress> laggards = log.laggards();
    NcclEvent cause = log.cause().orElseThrow(() -> new IllegalStateException("no cause found"));
    System.out.printf("found: %d processes, %d communicator(s), laggard rank(s) %s, cause line %d %s %s%n",
        log.processes().size(), log.communicators().size(),
        laggards.stream().map(o -> Integer.toString(o.rank())).toList(), cause.lineNumber(), cause.domain(),
        cause.peerAddress());
    if (laggards.size() != 1 || laggards.get(0).rank() != NcclLogGenerator.LAGGARD
        || !cause.peerAddress().equals(NcclLogGenerator.PEER_OF_FAILURE)
        || log.processes().size() != NcclLogGenerator.RANKS) {
      throw new IllegalStateException("parse result does not match the generated log:\n" + log.summary());
    }
  }
}
