package dev.frdiag.agent.controlplane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.agent.FakeTrainingRanks;
import dev.frdiag.agent.FakeWorkerServer;
import dev.frdiag.agent.controlplane.ControlPlaneException.Reason;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Asking a (fake) PyTorch worker server for its handlers, Flight Recorders and stacks: a CUDA build's NCCL
 * handlers with PyTorch's parameter rules, and a CPU build's handlers answering as torch 2.13.0+cpu answered.
 */
class WorkerServerTest {
  private static final String SCENARIO = "stall_dp_rank2_w4";

  @TempDir
  Path dir;

  private final UnixHttpClient client = UnixHttpClient.withDefaults();
  private final WorkerServer workerServer = new WorkerServer(client);
  private ServerSocketChannel server;
  private ServerSocketChannel cpu;
  private Path socket;
  private Path cpuSocket;

  @BeforeEach
  void start() throws Exception {
    socket = dir.resolve("torch_worker_3.sock");
    // Started ten seconds ago, a collective every 100 ms: about 100 issued, the last one still running or not.
    server = FakeTrainingRanks.serve(new FakeTrainingRanks.Training(3, 4, System.currentTimeMillis() - 10_000,
        100, 2000), socket);
    cpuSocket = dir.resolve("worker_0.sock");
    cpu = FakeWorkerServer.serveRecorded(cpuSocket, SCENARIO, 0);
  }

  @AfterEach
  void stop() throws Exception {
    server.close();
    cpu.close();
  }

  @Test
  void readsProgressFromTheActiveEntriesAsJson() throws Exception {
    FlightRecorderDump dump = DumpReader.create().parse(workerServer.dump(socket, Recorder.NCCL, true), socket, 3);

    assertThat(dump.version()).isEqualTo("2.10");
    assertThat(dump.progress()).singleElement().satisfies(p -> {
      assertThat(p.getProcessGroup()).isEqualTo("0");
      assertThat(p.getLastEnqueuedSeq()).isBetween(95L, 110L);
      assertThat(p.getLastCompletedSeq()).isBetween(p.getLastEnqueuedSeq() - 1, p.getLastEnqueuedSeq());
    });
    assertThat(dump.records()).hasSizeLessThanOrEqualTo(1)
        .allSatisfy(r -> assertThat(r.getState()).isEqualTo(CollectiveState.SCHEDULED));
  }

  @Test
  void readsEveryEntryWhenAskedForAll() throws Exception {
    FlightRecorderDump dump = DumpReader.create().parse(workerServer.dump(socket, Recorder.NCCL, false), socket,
        3);

    assertThat(dump.records().size()).isBetween(95, 110);
  }

  @Test
  void aCudaBuildListsTheNcclRecorder() throws Exception {
    assertThat(Recorder.among(workerServer.handlers(socket))).containsExactly(Recorder.NCCL);
  }

  @Test
  void theServerRefusesUnknownParametersAndValuesOtherThanTrueOrFalse() throws Exception {
    assertThat(client.post(socket, "/handler/dump_nccl_trace_json?onlyactive=1").text(200))
        .isEqualTo("Invalid value for onlyactive valid values are true or false");
    HttpAnswer unknown = client.post(socket, "/handler/dump_nccl_trace_json?includestacktraces=false");
    assertThat(unknown.status()).isEqualTo(400);
    assertThat(unknown.text(200)).isEqualTo("Invalid parameters - unexpected param passed in");
    assertThat(client.get(socket, "/handler/dump_nccl_trace_json").status()).as("handlers run on POST only")
        .isEqualTo(404);
  }

  @Test
  void aCpuBuildListsOnlyTheGenericRecorder() throws Exception {
    List<String> handlers = workerServer.handlers(cpuSocket);

    assertThat(handlers).containsExactly("dump_traceback", "pyspy_dump", "wait_counter_values", "fr_trace_json",
        "ping");
    assertThat(Recorder.among(handlers)).containsExactly(Recorder.GENERIC);
  }

  @Test
  void readsTheWholeGlooRingFromTheGenericRecorder() throws Exception {
    FlightRecorderDump dump = DumpReader.create().parse(workerServer.dump(cpuSocket, Recorder.GENERIC, true),
        cpuSocket, 0);

    // Rank 0's ring as recorded: 23 entries, the last its dp all_reduce #6 in group '3', never retired.
    assertThat(dump.records()).hasSize(23);
    assertThat(dump.records().get(22)).satisfies(r -> {
      assertThat(r.getProcessGroup()).isEqualTo("3");
      assertThat(r.getCollectiveSeq()).isEqualTo(6);
      assertThat(r.getBackend()).isEqualTo("gloo");
      assertThat(r.getRetired()).isFalse();
    });
  }

  @Test
  void saysWhatACpuBuildAnswersToTheNcclHandler() throws Exception {
    String measured = new String(FakeWorkerServer.resource("/torch-2.13-cpu/" + SCENARIO
        + "/dump_nccl_trace_json_rank_0.txt"), StandardCharsets.UTF_8).strip();
    assertThatThrownBy(() -> workerServer.dump(cpuSocket, Recorder.NCCL, true)).isInstanceOfSatisfying(
        ControlPlaneException.class, e -> {
          assertThat(e.reason()).isEqualTo(Reason.HTTP_STATUS);
          assertThat(e.getMessage()).isEqualTo("the worker server at " + cpuSocket + " answered 404 to "
              + "dump_nccl_trace_json: " + measured);
        });
    assertThat(client.get(cpuSocket, "/handler/fr_trace_json").body()).as("a GET on a handler is a bare 404")
        .isEmpty();
  }

  @Test
  void readsPythonStacksAndSaysWhyPySpyCannotGiveThem() throws Exception {
    assertThat(workerServer.stacks(cpuSocket, WorkerServer.TRACEBACK))
        .contains("File \"/work/torchlab/scripts/train.py\", line 128 in collective");
    assertThatThrownBy(() -> workerServer.stacks(cpuSocket, WorkerServer.PYSPY))
        .hasMessage("the worker server at " + cpuSocket + " answered 500 to pyspy_dump: sh: 1: py-spy: not found");
  }

  @Test
  void refusesAListOfHandlersThatIsNotOne() {
    assertThat(WorkerServer.names("[\"a\", \"b\"]")).containsExactly("a", "b");
    assertThat(WorkerServer.names("[]")).isEmpty();
    assertThat(WorkerServer.names("<h1>torch.distributed.WorkerServer</h1>")).isNull();
    assertThat(WorkerServer.names("[1, 2]")).isNull();
  }

  @Test
  void saysWhichHandlerTheServerDoesNotHave() throws Exception {
    assertThat(client.post(socket, "/handler/no_such_handler").status()).isEqualTo(404);
  }

  @Test
  void namesTheSocketWhenTheRankIsGone() throws Exception {
    // What a dead rank leaves: its socket file, with nothing listening. (Closing the fake server above would race
    // with its accept thread: the JDK defers closing a channel another thread is blocked in.)
    Path gone = dir.resolve("torch_worker_9.sock");
    try (ServerSocketChannel dead = ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
      dead.bind(java.net.UnixDomainSocketAddress.of(gone));
    }

    assertThatThrownBy(() -> workerServer.handlers(gone)).isInstanceOfSatisfying(
        ControlPlaneException.class, e -> {
          assertThat(e.reason()).isEqualTo(Reason.REFUSED);
          assertThat(e.socket()).isEqualTo(gone);
        });
  }
}
