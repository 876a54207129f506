package dev.frdiag.bench;

import dev.frdiag.collector.recorder.FlightRecorder;
import dev.frdiag.collector.recorder.OpName;
import dev.frdiag.collector.recorder.ProcessGroupHandle;
import dev.frdiag.collector.recorder.StackTrace;
import dev.frdiag.collector.recorder.TensorList;
import dev.frdiag.collector.ring.RecordView;
import dev.frdiag.proto.v1.Frame;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * What the flight recorder costs the rank: one collective recorded and completed, alone and while a reader
 * snapshots the ring, and how long a snapshot of a full default-size ring takes. See docs/PERFORMANCE.md.
 *
 * <p>Run: {@code java -jar bench/target/frdiag-bench.jar RecorderBench -prof gc}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(3)
public class RecorderBench {

  /** A default-size recorder with the op, group, tensors and stack interned up front, as a rank would. */
  static final class Fixture {
    final FlightRecorder recorder;
    final ProcessGroupHandle world;
    final OpName allReduce;
    final TensorList tensors;
    final StackTrace stack;

    Fixture(LongSupplier clock) {
      recorder = new FlightRecorder(FlightRecorder.DEFAULT_CAPACITY, clock, 600_000);
      world = recorder.registerProcessGroup("0", "default_pg", new int[] {0, 1, 2, 3, 4, 5, 6, 7});
      allReduce = recorder.op("all_reduce");
      tensors = recorder.tensors(new long[][] {{1024, 1024}}, "BFloat16");
      stack = recorder.stack(List.of(
          Frame.newBuilder().setName("all_reduce").setFilename("torch/distributed/distributed_c10d.py")
              .setLine(2501).build(),
          Frame.newBuilder().setName("train_step").setFilename("train.py").setLine(88).build()));
    }

    long recordOne() {
      long handle = recorder.enqueue(world, allReduce, tensors, tensors, stack);
      recorder.completed(handle);
      return handle;
    }
  }

  @State(Scope.Thread)
  public static class Rank {
    /**
     * {@code wall}: the production clock ({@link FlightRecorder#epochNanos}), read at enqueue and at completion.
     * {@code fixed}: a constant, to show what the recorder costs apart from those two clock reads.
     */
    @Param({"wall", "fixed"})
    String clock;

    Fixture rank;

    @Setup
    public void setUp() {
      rank = new Fixture(clock.equals("wall") ? FlightRecorder::epochNanos : () -> 1_700_000_000_000_000_000L);
    }
  }

  /** (a) The rank's cost per collective: record it at enqueue, mark it completed when the device is done. */
  @Benchmark
  public long enqueueCompleted(Rank state) {
    return state.rank.recordOne();
  }

  /**
   * (b) The same while another thread snapshots the whole ring in a loop, as the reporter and dump replies do.
   * Both run as one JMH group (one thread each, sharing the recorder), so JMH reports the writer's time per op
   * and the reader's time per whole-ring snapshot side by side.
   */
  @State(Scope.Group)
  public static class SharedRank {
    Fixture rank;

    @Setup
    public void setUp() {
      rank = new Fixture(FlightRecorder::epochNanos);
    }
  }

  /** Per-reader scratch copy, as the reporter keeps one. */
  @State(Scope.Thread)
  public static class ReaderView {
    final RecordView view = new RecordView();
  }

  @Benchmark
  @Group("withSnapshotter")
  @GroupThreads(1)
  public long enqueueCompletedWhileSnapshotting(SharedRank state) {
    return state.rank.recordOne();
  }

  @Benchmark
  @Group("withSnapshotter")
  @GroupThreads(1)
  public long snapshotterReadsWholeRing(SharedRank state, ReaderView reader) {
    return readAll(state.rank.recorder, reader.view);
  }

  /** (c) A full ring of {@link FlightRecorder#DEFAULT_CAPACITY} records in mixed states, for snapshots. */
  @State(Scope.Thread)
  public static class FullRing {
    FlightRecorder recorder;
    final RecordView view = new RecordView();

    @Setup
    public void setUp() {
      Fixture rank = new Fixture(FlightRecorder::epochNanos);
      recorder = rank.recorder;
      OpName send = recorder.op("send");
      for (int i = 0; i < FlightRecorder.DEFAULT_CAPACITY; i++) {
        long handle = i % 10 == 9
            ? recorder.enqueueP2p(rank.world, send, 1, rank.tensors, rank.stack)
            : recorder.enqueue(rank.world, rank.allReduce, rank.tensors, rank.tensors, rank.stack);
        // The newest few stay in flight, as on a rank that is waiting on a collective.
        if (i < FlightRecorder.DEFAULT_CAPACITY - 8) {
          recorder.completed(handle);
        } else if (i % 2 == 0) {
          recorder.started(handle);
        }
      }
    }
  }

  /** Copies every record of a full 2000-record ring out of the ring, as a consistent view each. */
  @Benchmark
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public long snapshotReadOnly(FullRing ring) {
    return readAll(ring.recorder, ring.view);
  }

  /** Copies every record and converts it to its wire form, as a dump reply does. */
  @Benchmark
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public void snapshotToProto(FullRing ring, Blackhole bh) {
    FlightRecorder recorder = ring.recorder;
    long next = recorder.nextRecordId();
    for (long id = Math.max(0, next - recorder.capacity()); id < next; id++) {
      if (recorder.read(id, ring.view)) {
        bh.consume(recorder.toProto(ring.view));
      }
    }
  }

  private static long readAll(FlightRecorder recorder, RecordView view) {
    long next = recorder.nextRecordId();
    long sum = 0;
    for (long id = Math.max(0, next - recorder.capacity()); id < next; id++) {
      if (recorder.read(id, view)) {
        sum += view.opId;
      }
    }
    return sum;
  }
}
