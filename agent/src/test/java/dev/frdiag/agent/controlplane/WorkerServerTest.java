package dev.frdiag.agent.controlplane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.agent.FakeTrainingRanks;
import dev.frdiag.agent.controlplane.ControlPlaneException.Reason;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Asking a (fake) PyTorch worker server for its Flight Recorder, with PyTorch's handler and parameter rules. */
class WorkerServerTest {
  @TempDir
  Path dir;

  private final UnixHttpClient client = UnixHttpClient.withDefaults();
  private final WorkerServer workerServer = new WorkerServer(client);
  private ServerSocketChannel server;
  private Path socket;

  @BeforeEach
  void start() throws Exception {
    socket = dir.resolve("torch_worker_3.sock");
    // Started ten seconds ago, a collective every 100 ms: about 100 issued, the last one still running or not.
    server = FakeTrainingRanks.serve(new FakeTrainingRanks.Training(3, 4, System.currentTimeMillis() - 10_000,
        100, 2000), socket);
  }

  @AfterEach
  void stop() throws Exception {
    server.close();
  }

  @Test
  void readsProgressFromTheActiveEntriesAsJson() throws Exception {
    FlightRecorderDump dump = DumpReader.create().parse(workerServer.dumpJson(socket, true), socket, 3);

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
    FlightRecorderDump dump = DumpReader.create().parse(workerServer.dumpJson(socket, false), socket, 3);

    assertThat(dump.records().size()).isBetween(95, 110);
  }

  @Test
  void readsThePickleWithStacks() throws Exception {
    FlightRecorderDump dump = DumpReader.create().parse(workerServer.dumpPickle(socket, false, true), socket, 3);

    assertThat(dump.frames()).isNotEmpty();
    assertThat(dump.records()).isNotEmpty();
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

    assertThatThrownBy(() -> workerServer.dumpJson(gone, true)).isInstanceOfSatisfying(
        ControlPlaneException.class, e -> {
          assertThat(e.reason()).isEqualTo(Reason.REFUSED);
          assertThat(e.socket()).isEqualTo(gone);
        });
  }
}
