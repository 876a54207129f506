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
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.IntStream;

/**
 * A separate process hosting PyTorch ranks that train, as far as a node agent can see: every {@code periodMs}
 * each rank issues the next all_reduce on the default group, completed a quarter period later. Seqs are a function
 * of the wall clock and the shared start time, so ranks in different processes agree, as collectives make real
 * ranks agree.
 *
 * <p>Each rank serves PyTorch's worker server on its own Unix domain socket (the pattern with {@code {rank}}
 * replaced, unless the pattern is {@code none}): HTTP/1.1, {@code GET /}, {@code GET /handler/} and {@code POST
 * /handler/<name>} for {@code dump_nccl_trace_json} and {@code dump_nccl_trace_pickle}, with PyTorch's parameter
 * rules (only known keys, values exactly {@code true}/{@code false}, else 400; unknown handler 404). Like PyTorch it
 * refuses to start when the socket file already exists. Each rank also listens on its debug pipe
 * {@code <pipePrefix><rank>.pipe} and writes a full dump (pickle, with stacks) to {@code <dumpPrefix><rank>}.
 *
 * <p>Arguments: {@code worldSize startMillis periodMs socketPattern pipePrefix dumpPrefix rank...}. Commands on
 * stdin: {@code stall <rank|all> cpu|gpu <atMillis>}: from that time on, {@code cpu} issues nothing more (a CPU-side
 * stall), {@code gpu} issues one more collective that never completes (a rank waiting on a peer);
 * {@code exit}. Prints its pid, then {@code ready} once every rank serves, {@code dumped <rank>} after each pipe dump.
 */
public final class FakeTrainingRanks {
  /** Entries a rank's ring keeps, like TORCH_FR_BUFFER_SIZE. */
  static final int RING = 64;
  static final String JSON_HANDLER = "dump_nccl_trace_json";
  static final String PICKLE_HANDLER = "dump_nccl_trace_pickle";

  private FakeTrainingRanks() {}

  /** How a rank stalls. */
  enum Stall { NONE, CPU, GPU }

  /** One rank's training, as a function of time. Thread-safe. */
  public static final class Training {
    final int rank;
    final int ring;
    final int worldSize;
    final long startMillis;
    final long periodMillis;
    private volatile Stall stall = Stall.NONE;
    private volatile long stallSeq;
    final AtomicLong requests = new AtomicLong();

    /** @param ring entries the Flight Recorder keeps (TORCH_FR_BUFFER_SIZE) */
    public Training(int rank, int worldSize, long startMillis, long periodMillis, int ring) {
      this.rank = rank;
      this.ring = ring;
      this.worldSize = worldSize;
      this.startMillis = startMillis;
      this.periodMillis = periodMillis;
    }

    /** Requests served by its worker server. */
    public long requests() {
      return requests.get();
    }

    void stall(Stall how, long atMillis) {
      stallSeq = seqAt(atMillis);
      stall = how;
    }

    private long seqAt(long t) {
      return t < startMillis ? 0 : (t - startMillis) / periodMillis + 1;
    }

    long created(long seq) {
      return startMillis + (seq - 1) * periodMillis;
    }

    long issued(long t) {
      long s = seqAt(t);
      return switch (stall) {
        case NONE -> s;
        case CPU -> Math.min(s, stallSeq);
        case GPU -> Math.min(s, stallSeq + 1);
      };
    }

    long completed(long t) {
      long done = t < startMillis + periodMillis / 4 ? 0 : (t - startMillis - periodMillis / 4) / periodMillis + 1;
      done = Math.min(done, issued(t));
      return stall == Stall.GPU ? Math.min(done, stallSeq) : done;
    }

    /** The rank's Flight Recorder at {@code t}: the last {@code ring} entries, or only those not completed. */
    public FlightRecorderDump dump(long t, boolean onlyActive, boolean collectives, Path file) {
      int[] members = IntStream.range(0, worldSize).toArray();
      CommsId.GroupLayout layout = CommsId.layoutOf(members);
      ProcessGroup.Builder world = ProcessGroup.newBuilder().setName("0").setDesc("default_pg")
          .setGlobalRankStart(layout.start()).setGlobalRankStride(layout.stride()).setLocalId("0");
      for (int r : members) {
        world.addRanks(r);
      }
      long issued = issued(t);
      long completed = completed(t);
      List<CollectiveRecord> records = new ArrayList<>();
      for (long seq = Math.max(1, issued - ring + 1); collectives && seq <= issued; seq++) {
        boolean done = seq <= completed;
        if (onlyActive && done) {
          continue;
        }
        long createdNs = created(seq) * 1_000_000L;
        CollectiveRecord.Builder r = CollectiveRecord.newBuilder().setRecordId(seq - 1).setProcessGroup("0")
            .setCollectiveSeq(seq).setP2PSeq(0).setOpId(seq).setBackend("nccl").setOp("all_reduce")
            .setState(done ? CollectiveState.COMPLETED : CollectiveState.SCHEDULED).setTimeCreatedNs(createdNs)
            .setTimeoutMs(600_000).setThreadName("MainThread").setThreadId("140245")
            .setCommsId(CommsId.of("0", seq, false, layout)).addInputSizes(shape()).addOutputSizes(shape())
            .addInputDtypes("Float").addOutputDtypes("Float").addFrameIds(0).addFrameIds(1);
        if (done) {
          r.setTimeCompletedNs(createdNs + periodMillis / 4 * 1_000_000L).setRetired(true);
        }
        records.add(r.build());
      }
      Map<Integer, Frame> frames = Map.of(
          0, Frame.newBuilder().setName("all_reduce").setFilename("torch/distributed/distributed_c10d.py")
              .setLine(2501).build(),
          1, Frame.newBuilder().setName("train_step").setFilename("train.py").setLine(88).build());
      ProcessGroupProgress progress = ProcessGroupProgress.newBuilder().setProcessGroup("0")
          .setLastEnqueuedSeq(issued == 0 ? -1 : issued).setLastStartedSeq(-1)
          .setLastCompletedSeq(completed == 0 ? -1 : completed).setLastEnqueuedP2PSeq(-1)
          .setLastCompletedP2PSeq(-1).build();
      return new FlightRecorderDump(file, rank, "2.10", "2.27.3", List.of(world.build()), records,
          List.of(progress), frames, List.of());
    }
  }

  public static void main(String[] args) throws Exception {
    int worldSize = Integer.parseInt(args[0]);
    long start = Long.parseLong(args[1]);
    long period = Long.parseLong(args[2]);
    String socketPattern = args[3];
    String pipePrefix = args[4];
    String dumpPrefix = args[5];
    Map<Integer, Training> ranks = new LinkedHashMap<>();
    for (int i = 6; i < args.length; i++) {
      int rank = Integer.parseInt(args[i]);
      Training t = new Training(rank, worldSize, start, period, RING);
      ranks.put(rank, t);
      if (!socketPattern.equals("none")) {
        serve(t, Path.of(socketPattern.replace("{rank}", Integer.toString(rank))));
      }
      listen(t, Path.of(pipePrefix + rank + ".pipe"), Path.of(dumpPrefix + rank));
    }
    // Loads and warms what answering takes, so the first answers are as quick as the later ones.
    for (Training t : ranks.values()) {
      DumpWriter.toJson(t.dump(System.currentTimeMillis(), true, true, Path.of("warm-up")));
      DumpWriter.toPickle(t.dump(System.currentTimeMillis(), false, true, Path.of("warm-up")));
    }
    say("pid " + ProcessHandle.current().pid());
    say("ready");
    BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String command;
    while ((command = commands.readLine()) != null) {
      String[] w = command.trim().split("\\s+");
      if (w[0].equals("exit")) {
        System.exit(0);
      } else if (w[0].equals("stall") && w.length == 4) {
        Stall how = Stall.valueOf(w[2].toUpperCase(java.util.Locale.ROOT));
        long at = Long.parseLong(w[3]);
        for (Training t : ranks.values()) {
          if (w[1].equals("all") || w[1].equals(Integer.toString(t.rank))) {
            t.stall(how, at);
          }
        }
        say("stalled " + w[1]);
      } else {
        say("unknown command " + command);
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

  /** Debug pipe: as PyTorch does, remove what is there and mkfifo; each write makes a full dump. */
  private static void listen(Training t, Path pipe, Path dumpFile) throws IOException, InterruptedException {
    Files.deleteIfExists(pipe);
    Process mkfifo = new ProcessBuilder("mkfifo", pipe.toString()).inheritIO().start();
    if (mkfifo.waitFor() != 0) {
      throw new IOException("mkfifo " + pipe + " failed");
    }
    // Opened read-write so the reader never sees end-of-file between writers; read() blocks until a write.
    RandomAccessFile in = new RandomAccessFile(pipe.toFile(), "rw");
    String name = dumpFile.getFileName().toString();
    String namePrefix = name.substring(0, name.length() - Integer.toString(t.rank).length());
    daemon("pipe-" + t.rank, () -> {
      byte[] buf = new byte[128];
      while (in.read(buf) > 0) {
        FlightRecorderDump dump = t.dump(System.currentTimeMillis(), false, true, dumpFile);
        DumpWriter.write(dump, dumpFile.getParent(), namePrefix, DumpWriter.Encoding.PICKLE);
        say("dumped " + t.rank);
      }
      return null;
    });
  }

  /**
   * Serves {@code t}'s worker server on {@code socket} until the returned channel is closed, which leaves the
   * socket file behind as a rank that died does: the NCCL handlers, with PyTorch's parameter rules.
   */
  public static ServerSocketChannel serve(Training t, Path socket) throws IOException {
    Map<String, Function<Map<String, String>, FakeWorkerServer.Answer>> handlers = new LinkedHashMap<>();
    handlers.put(PICKLE_HANDLER, params -> dump(t, PICKLE_HANDLER, params));
    handlers.put(JSON_HANDLER, params -> dump(t, JSON_HANDLER, params));
    return FakeWorkerServer.serve(socket, handlers);
  }

  private static FakeWorkerServer.Answer dump(Training t, String handler, Map<String, String> params) {
    t.requests.incrementAndGet();
    Set<String> known = handler.equals(JSON_HANDLER) ? Set.of("includecollectives", "onlyactive")
        : Set.of("includecollectives", "includestacktraces", "onlyactive");
    Map<String, Boolean> values = new LinkedHashMap<>(Map.of("includecollectives", true, "onlyactive", false,
        "includestacktraces", true));
    for (Map.Entry<String, String> p : params.entrySet()) {
      if (known.contains(p.getKey())) {
        if (!p.getValue().equals("true") && !p.getValue().equals("false")) {
          return FakeWorkerServer.Answer.text(400, "Invalid value for " + p.getKey()
              + " valid values are true or false");
        }
        values.put(p.getKey(), p.getValue().equals("true"));
      }
    }
    if (params.keySet().stream().anyMatch(k -> !known.contains(k))) {
      return FakeWorkerServer.Answer.text(400, "Invalid parameters - unexpected param passed in");
    }
    FlightRecorderDump dump = t.dump(System.currentTimeMillis(), values.get("onlyactive"),
        values.get("includecollectives"), Path.of("worker-server"));
    if (handler.equals(JSON_HANDLER)) {
      return FakeWorkerServer.Answer.ok("application/json", DumpWriter.toJson(dump));
    }
    FlightRecorderDump d = values.get("includestacktraces") ? dump : new FlightRecorderDump(dump.file(),
        dump.rank(), dump.version(), dump.commLibVersion(), dump.processGroups(), dump.records().stream()
            .map(r -> r.toBuilder().clearFrameIds().build()).toList(), dump.progress(), Map.of(), List.of());
    return FakeWorkerServer.Answer.ok("application/octet-stream", DumpWriter.toPickle(d));
  }

  private static Shape shape() {
    return Shape.newBuilder().addDims(1024).addDims(1024).build();
  }

  /** Runs {@code body} on a daemon thread; a failure is printed, which the test sees. */
  private static void daemon(String name, java.util.concurrent.Callable<Void> body) {
    Thread t = new Thread(() -> {
      try {
        body.call();
      } catch (Exception e) {
        say(name + " failed: " + e);
      }
    }, name);
    t.setDaemon(true);
    t.start();
  }
}
