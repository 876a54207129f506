package dev.frdiag.bench;

import dev.frdiag.readers.pytorch.DumpFormatException;
import dev.frdiag.readers.pytorch.DumpReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Prints what decoding one Flight Recorder dump costs, with nothing else around it: writes a folder as
 * {@link AnalyzeBench} does (2,000 entries per rank, 73-frame stacks), holds {@code files} of its dumps in memory,
 * and parses them all {@code rounds} times on one thread, printing milliseconds per file for each round and the
 * median of the rounds after the first (which includes compiling the decoder). Run it under
 * {@code -XX:TieredStopAtLevel=1} to see what {@code fr-diagnose}, which runs on the client compiler, pays. Usage:
 * {@code java -cp bench/target/frdiag-bench.jar dev.frdiag.bench.DumpReadBench [files] [rounds]}.
 */
public final class DumpReadBench {
  private DumpReadBench() {}

  public static void main(String[] args) throws IOException, DumpFormatException {
    int files = args.length > 0 ? Integer.parseInt(args[0]) : 64;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 7;
    if (files < 1 || rounds < 2) {
      throw new IllegalArgumentException("usage: DumpReadBench [files >= 1] [rounds >= 2]");
    }
    Path dir = Files.createTempDirectory("dump-read-bench-");
    try {
      AnalyzeBench.write(files, dir);
      byte[][] dumps = new byte[files][];
      long bytes = 0;
      for (int i = 0; i < files; i++) {
        dumps[i] = Files.readAllBytes(dir.resolve(DumpReader.DEFAULT_PREFIX + i));
        bytes += dumps[i].length;
      }
      System.out.printf("%d dumps, %,d bytes in all%n", files, bytes);
      DumpReader reader = DumpReader.create();
      List<Double> perFile = new ArrayList<>();
      for (int round = 1; round <= rounds; round++) {
        long records = 0;
        long start = System.nanoTime();
        for (int i = 0; i < files; i++) {
          records += reader.parse(dumps[i], dir.resolve(DumpReader.DEFAULT_PREFIX + i), i).records().size();
        }
        double ms = (System.nanoTime() - start) / 1e6 / files;
        System.out.printf("round %d: %.2f ms per dump (%,d records)%n", round, ms, records);
        if (round > 1) {
          perFile.add(ms);
        }
      }
      Collections.sort(perFile);
      System.out.printf("median of rounds 2-%d: %.2f ms per dump, %.0f MB/s on one thread%n", rounds,
          perFile.get(perFile.size() / 2), bytes / 1e3 / files / perFile.get(perFile.size() / 2));
    } finally {
      try (var paths = Files.walk(dir)) {
        paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }
}
