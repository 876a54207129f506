package dev.frdiag.agent;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.testing.dumps.DumpWriter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * A separate process that behaves like one PyTorch rank stuck in a hang, as far as a node agent can see: it
 * creates its debug pipe {@code <pipePrefix><rank>.pipe} with mkfifo, and each time something is written to the
 * pipe it writes its Flight Recorder dump to {@code <dumpPrefix><rank>} the way PyTorch does (pickle, written in
 * place). On the command {@code timeout} on stdin it appends PyTorch's watchdog timeout lines to its training log.
 *
 * <p>Arguments: {@code rank worldSize role pipePrefix dumpPrefix logFile}. Roles:
 * <ul>
 *   <li>{@code WAITING}: issued all_reduce seq 5 on the default group and waits in it;
 *   <li>{@code NEVER_ISSUED}: completed seq 1-4 and never issued seq 5 (a CPU-side stall);
 *   <li>{@code DEAF}: creates its pipe but never reads it, so it never dumps (a wedged process).
 * </ul>
 *
 * <p>Prints {@code ready} once its pipe is open, {@code dumped} after each dump; exits on {@code exit} or when
 * stdin closes (the test JVM went away).
 */
public final class FakeTorchRank {
  /** The collective the job hangs in. */
  static final long STUCK_SEQ = 5;

  /** How a fake rank behaves. */
  enum Role { WAITING, NEVER_ISSUED, DEAF }

  private FakeTorchRank() {}

  public static void main(String[] args) throws Exception {
    int rank = Integer.parseInt(args[0]);
    int worldSize = Integer.parseInt(args[1]);
    Role role = Role.valueOf(args[2]);
    Path pipe = Path.of(args[3] + rank + ".pipe");
    Path dumpFile = Path.of(args[4] + rank);
    Path log = Path.of(args[5]);

    // As PyTorch does: remove what is there, then mkfifo.
    Files.deleteIfExists(pipe);
    Process mkfifo = new ProcessBuilder("mkfifo", pipe.toString()).inheritIO().start();
    if (mkfifo.waitFor() != 0) {
      throw new IOException("mkfifo " + pipe + " failed");
    }
    if (role != Role.DEAF) {
      // Opened read-write so the reader never sees end-of-file between writers; read() blocks until a write.
      RandomAccessFile in = new RandomAccessFile(pipe.toFile(), "rw");
      FlightRecorderDump dump = dump(rank, worldSize, role, dumpFile);
      String name = dumpFile.getFileName().toString();
      String namePrefix = name.substring(0, name.length() - Integer.toString(rank).length());
      Thread reader = new Thread(() -> {
        try {
          byte[] buf = new byte[128];
          while (in.read(buf) > 0) {
            DumpWriter.write(dump, dumpFile.getParent(), namePrefix, DumpWriter.Encoding.PICKLE);
            say("dumped");
          }
        } catch (IOException e) {
          say("pipe failed: " + e);
        }
      }, "pipe-reader");
      reader.setDaemon(true);
      reader.start();
    }
    say("ready");
    BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String command;
    while ((command = commands.readLine()) != null) {
      switch (command.trim()) {
        case "timeout" -> {
          Files.writeString(log, timeoutLines(rank), StandardCharsets.UTF_8, StandardOpenOption.CREATE,
              StandardOpenOption.APPEND);
          say("logged");
        }
        case "exit" -> System.exit(0);
        default -> say("unknown command " + command);
      }
    }
    System.exit(0);
  }

  private static void say(String line) {
    synchronized (System.out) {
      System.out.println(line);
      System.out.flush();
    }
  }

  /** What PyTorch 2.4+ prints when the watchdog times out on seq 5, with a training line around it. */
  static String timeoutLines(int rank) {
    String prefix = "[rank" + rank + "]:[E1213 17:24:49.0821116" + rank + " ProcessGroupNCCL.cpp:";
    return "step 4410 | loss 2.3127 | lr 3.0e-4\n"
        + prefix + "632] [Rank " + rank + "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
        + STUCK_SEQ + ", OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=100000) ran for 100007"
        + " milliseconds before timing out.\n"
        + prefix + "2168] [PG ID 0 PG GUID 0(default_pg) Rank " + rank + "]  failure detected by watchdog at work"
        + " sequence id: " + STUCK_SEQ + " PG status: last enqueued work: " + STUCK_SEQ + ", last completed work: "
        + (STUCK_SEQ - 1) + "\n";
  }

  /**
   * The rank's dump: all_reduce seq 1-4 completed on every rank about two minutes ago; seq 5 started (and
   * waiting) on the ranks that issued it. Every record carries the same two-frame Python stack.
   */
  static FlightRecorderDump dump(int rank, int worldSize, Role role, Path file) {
    int[] members = IntStream.range(0, worldSize).toArray();
    CommsId.GroupLayout layout = CommsId.layoutOf(members);
    ProcessGroup.Builder world = ProcessGroup.newBuilder().setName("0").setDesc("default_pg")
        .setGlobalRankStart(layout.start()).setGlobalRankStride(layout.stride()).setLocalId("0");
    for (int r : members) {
      world.addRanks(r);
    }
    Map<Integer, Frame> frames = Map.of(
        0, Frame.newBuilder().setName("all_reduce").setFilename("torch/distributed/distributed_c10d.py")
            .setLine(2501).build(),
        1, Frame.newBuilder().setName("train_step").setFilename("train.py").setLine(88).build());
    long t0 = System.currentTimeMillis() * 1_000_000L - 130_000_000_000L;
    long last = role == Role.NEVER_ISSUED ? STUCK_SEQ - 1 : STUCK_SEQ;
    List<CollectiveRecord> records = new ArrayList<>();
    for (long seq = 1; seq <= last; seq++) {
      long created = t0 + seq * 1_000_000_000L;
      boolean stuck = seq == STUCK_SEQ;
      CollectiveRecord.Builder r = CollectiveRecord.newBuilder().setRecordId(seq - 1).setProcessGroup("0")
          .setCollectiveSeq(seq).setP2PSeq(0).setOpId(seq).setBackend("nccl").setOp("all_reduce")
          .setState(stuck ? CollectiveState.STARTED : CollectiveState.COMPLETED).setTimeCreatedNs(created)
          .setTimeStartedNs(created + 1_000_000).setTimeoutMs(100_000).setThreadName("MainThread")
          .setThreadId("140245")
          .setCommsId(CommsId.of("0", seq, false, layout)).addInputSizes(shape()).addOutputSizes(shape())
          .addInputDtypes("Float").addOutputDtypes("Float").addFrameIds(0).addFrameIds(1);
      if (!stuck) {
        r.setTimeCompletedNs(created + 5_000_000).setDurationMs(4.0);
      }
      records.add(r.build());
    }
    ProcessGroupProgress progress = ProcessGroupProgress.newBuilder().setProcessGroup("0")
        .setLastEnqueuedSeq(last).setLastStartedSeq(last).setLastCompletedSeq(Math.min(last, STUCK_SEQ - 1))
        .setLastEnqueuedP2PSeq(-1).setLastCompletedP2PSeq(-1).build();
    return new FlightRecorderDump(file, rank, "2.10", "2.27.3", List.of(world.build()), records,
        List.of(progress), frames, List.of());
  }

  private static Shape shape() {
    return Shape.newBuilder().addDims(1024).addDims(1024).build();
  }
}
