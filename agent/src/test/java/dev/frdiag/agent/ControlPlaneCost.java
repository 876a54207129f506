package dev.frdiag.agent;

import dev.frdiag.agent.controlplane.Recorder;
import dev.frdiag.agent.controlplane.UnixHttpClient;
import dev.frdiag.agent.controlplane.WorkerServer;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.testing.dumps.DumpWriter;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What polling a rank's worker server costs, printed for docs/PERFORMANCE.md: requests per rank per minute at the
 * default interval, bytes per answer at 2,000 entries with only active entries and with all, and the agent's time
 * per answer (request over the socket, parse, progress). Not a test: run by hand, figures vary with the machine.
 */
public final class ControlPlaneCost {
  private static final int ENTRIES = 2000;
  private static final int ROUNDS = 300;

  private ControlPlaneCost() {}

  public static void main(String[] args) throws Exception {
    long period = 100;
    long now = System.currentTimeMillis();
    // Started long enough ago that the ring is full.
    FakeTrainingRanks.Training rank = new FakeTrainingRanks.Training(0, 8, now - (ENTRIES + 10) * period, period,
        ENTRIES);
    FlightRecorderDump all = rank.dump(now, false, true, Path.of("all"));
    System.out.printf("requests per rank per minute at the default %s: %d (a node of 8 ranks: %d)%n",
        AgentSettings.DEFAULT_PROGRESS_INTERVAL, 60_000 / AgentSettings.DEFAULT_PROGRESS_INTERVAL.toMillis(),
        8 * 60_000 / AgentSettings.DEFAULT_PROGRESS_INTERVAL.toMillis());
    System.out.printf("JSON, all %d entries:        %,d bytes%n", all.records().size(), DumpWriter.toJson(all).length);
    for (int active : new int[] {0, 1, 8, 43}) {
      System.out.printf("JSON, only active, %2d active: %,d bytes%n", active, DumpWriter.toJson(active(all, active))
          .length);
    }
    System.out.printf("pickle with stacks (2 frames), all %d entries (a pipe dump): %,d bytes%n",
        all.records().size(), DumpWriter.toPickle(all).length);

    Path dir = Files.createTempDirectory("frdiag-cp-cost");
    Path socket = dir.resolve("w.sock");
    ServerSocketChannel server = FakeTrainingRanks.serve(rank, socket);
    WorkerServer ws = new WorkerServer(UnixHttpClient.withDefaults());
    DumpReader reader = DumpReader.create();
    try {
      for (boolean onlyActive : new boolean[] {true, false}) {
        long[] nanos = new long[ROUNDS];
        int bytes = 0;
        for (int i = 0; i < ROUNDS; i++) {
          long t0 = System.nanoTime();
          byte[] json = ws.dump(socket, Recorder.NCCL, onlyActive);
          DumpFile.usable(0, 8, reader.parse(json, socket, 0), List.of());
          nanos[i] = System.nanoTime() - t0;
          bytes = json.length;
        }
        // The first third warms the JIT up.
        long[] kept = Arrays.copyOfRange(nanos, ROUNDS / 3, ROUNDS);
        Arrays.sort(kept);
        System.out.printf("round trip + parse, %s (%,d bytes): median %.2f ms, p90 %.2f ms%n",
            onlyActive ? "only active" : "all entries", bytes, kept[kept.length / 2] / 1e6,
            kept[kept.length * 9 / 10] / 1e6);
      }
    } finally {
      server.close();
      Files.deleteIfExists(socket);
      Files.deleteIfExists(dir);
    }
  }

  /** {@code d} with only its last {@code n} entries, those not completed, as onlyactive returns them. */
  private static FlightRecorderDump active(FlightRecorderDump d, int n) {
    List<CollectiveRecord> records = new ArrayList<>();
    for (CollectiveRecord r : d.records().subList(d.records().size() - n, d.records().size())) {
      records.add(r.toBuilder().setState(CollectiveState.SCHEDULED).clearTimeCompletedNs().setRetired(false)
          .build());
    }
    return new FlightRecorderDump(d.file(), d.rank(), d.version(), d.commLibVersion(), d.processGroups(), records,
        d.progress(), d.frames(), List.of());
  }
}
