package dev.frdiag.bench;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.Liveness;
import dev.frdiag.analysis.RankEvidence;
import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.ring.RecordView;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.RankSimulator;
import dev.frdiag.testing.sim.Topology;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Prints how long {@link HangAnalyzer} takes on simulated jobs of growing size: the first (cold) run, as a
 * daemon's first incident sees it, and the median of several runs, since these machines are noisy. Usage: {@code java
 * [-Dcapacity=N] -cp bench/target/frdiag-bench.jar dev.frdiag.bench.AnalysisBench [ranks...]}; {@code capacity} is
 * the records each rank holds (default 256; a daemon keeps 61 per rank at 16,384 ranks).
 */
public final class AnalysisBench {
  private AnalysisBench() {}

  public static void main(String[] args) throws Exception {
    int[] sizes = args.length == 0 ? new int[] {1024, 4096} : Arrays.stream(args).mapToInt(Integer::parseInt).toArray();
    System.out.printf("%8s %10s %12s %12s %12s  %s%n", "ranks", "records", "first ms", "median ms", "min ms",
        "verdict");
    for (int ranks : sizes) {
      JobEvidence evidence = stalledJob(ranks, Integer.getInteger("capacity", 256));
      long records = evidence.ranks().stream().mapToLong(r -> r.records().size()).sum();
      long[] times = new long[7];
      Diagnosis d = null;
      for (int i = 0; i < times.length; i++) {
        long t0 = System.nanoTime();
        d = HangAnalyzer.analyze(evidence);
        times[i] = System.nanoTime() - t0;
      }
      long first = times[0];
      Arrays.sort(times);
      System.out.printf("%8d %10d %12.1f %12.1f %12.1f  %s %s %s%n", ranks, records, first / 1e6,
          times[times.length / 2] / 1e6, times[0] / 1e6, d.verdict(), d.symptom(), d.culpritRanks());
    }
  }

  /** A simulated job of {@code ranks} ranks with a GPU stall on rank ranks/2+1, read straight from its recorders. */
  static JobEvidence stalledJob(int ranks, int capacity) throws InterruptedException {
    int culprit = ranks / 2 + 1;
    try (RankSimulator sim = RankSimulator.builder()
        .topology(Topology.builder().worldSize(ranks).ranksPerHost(8).tensorParallel(4).pipelineStages(2).build())
        .fault(Fault.gpuStall(culprit, 20)).recorderCapacity(capacity).stepInterval(Duration.ZERO).build()) {
      sim.runSteps(25);
      List<RankEvidence> out = new ArrayList<>(ranks);
      RecordView view = new RecordView();
      for (int r = 0; r < ranks; r++) {
        FlightRecorder rec = sim.recorder(r);
        List<CollectiveRecord> records = new ArrayList<>();
        for (long id = Math.max(0, rec.nextRecordId() - rec.capacity()); id < rec.nextRecordId(); id++) {
          if (rec.read(id, view)) {
            records.add(rec.toProto(view));
          }
        }
        out.add(new RankEvidence(r, sim.identity(r), Liveness.ALIVE, true, "", rec.processGroups(), records,
            rec.progress(), List.of(), Map.of()));
      }
      return new JobEvidence("bench", ranks, out, 0, Duration.ofSeconds(1));
    }
  }
}
