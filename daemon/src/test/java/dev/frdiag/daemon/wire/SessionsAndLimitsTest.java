package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.InProcessDaemon;
import dev.frdiag.daemon.registry.StateBudget;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.GetJobStatusRequest;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ListJobsRequest;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupUpdate;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.WatchIncidentsRequest;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A rank's stream is bound to its session, a job's shape to its live ranks, and everything a client can make the
 * daemon hold or do is bounded: what an impostor, a squatter or a runaway client finds.
 */
class SessionsAndLimitsTest {
  @TempDir
  Path dataDir;

  private InProcessDaemon daemon;

  private ManagedChannel start(Limits limits) {
    daemon = new InProcessDaemon(DaemonSettings.builder().dataDir(dataDir).limits(limits).build());
    return daemon.channel();
  }

  @AfterEach
  void stop() throws InterruptedException {
    if (daemon != null) {
      daemon.close();
    }
  }

  private static ProcessGroup group(String name, int size) {
    ProcessGroup.Builder g = ProcessGroup.newBuilder().setName(name).setGlobalRankStart(0).setGlobalRankStride(1);
    for (int r = 0; r < size; r++) {
      g.addRanks(r);
    }
    return g.build();
  }

  private static RankMessage hello(String job, int rank, int worldSize, long pid) {
    return RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
        .setJobId(job).setGlobalRank(rank).setWorldSize(worldSize).setHostname("node0").setPid(pid))
        .addProcessGroups(group("0", worldSize))).build();
  }

  private static RankConnection connected(ManagedChannel channel, RankMessage hello) throws InterruptedException {
    RankConnection rank = new RankConnection(channel).send(hello);
    assertThat(rank.next().hasWelcome()).isTrue();
    return rank;
  }

  private static CompletableFuture<ReportEnvelope> diagnoseNow(ManagedChannel channel, String job, long deadlineMs) {
    CompletableFuture<ReportEnvelope> report = new CompletableFuture<>();
    DiagnosisGrpc.newStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS).diagnoseNow(
        DiagnoseNowRequest.newBuilder().setJobId(job).setSnapshotDeadlineMs(deadlineMs).build(),
        new StreamObserver<>() {
          @Override
          public void onNext(ReportEnvelope value) {
            report.complete(value);
          }

          @Override
          public void onError(Throwable t) {
            report.completeExceptionally(t);
          }

          @Override
          public void onCompleted() {
          }
        });
    return report;
  }

  private static void answer(RankConnection rank, DumpRequest request) {
    rank.send(RankMessage.newBuilder().setDumpReply(DumpReply.newBuilder().setRequestId(request.getRequestId()))
        .build());
  }

  @Test
  void aSecondLiveClaimOfARankIsRefusedAndTheRealRankKeepsItsDumpRequests() throws Exception {
    ManagedChannel channel = start(Limits.defaults());
    RankConnection real = connected(channel, hello("job", 0, 1, 100));

    Status impostor = new RankConnection(channel).send(hello("job", 0, 1, 666)).end();
    assertThat(impostor.getCode()).isEqualTo(Status.Code.ALREADY_EXISTS);
    assertThat(impostor.getDescription()).isEqualTo("rank 0 of job job is already connected (host node0, pid 100); "
        + "a second stream for it is refused while the first is alive");

    CompletableFuture<ReportEnvelope> report = diagnoseNow(channel, "job", 10_000);
    DaemonMessage request = real.next();
    assertThat(request.hasDumpRequest()).as("the dump request goes to the rank that really runs").isTrue();
    answer(real, request.getDumpRequest());
    assertThat(report.get(20, TimeUnit.SECONDS).getSummary().getCulpritRanksList()).isEmpty();
    var status = DiagnosisGrpc.newBlockingStub(channel).getJobStatus(GetJobStatusRequest.newBuilder()
        .setJobId("job").build()).getSummary();
    assertThat(status.getRanksConnected()).isEqualTo(1);
    assertThat(status.getRanksLost()).as("the refused impostor costs the real rank nothing").isZero();
  }

  @Test
  void aRankWhoseStreamEndedMayConnectAgain() throws Exception {
    ManagedChannel channel = start(Limits.defaults());
    RankConnection first = connected(channel, hello("job", 0, 1, 100));
    first.close();
    first.end();
    await().atMost(Duration.ofSeconds(5)).ignoreExceptions().untilAsserted(() -> {
      RankConnection restarted = new RankConnection(channel).send(hello("job", 0, 1, 101));
      assertThat(restarted.next().hasWelcome()).isTrue();
    });
  }

  @Test
  void aSquatterThatClaimedTheJobFirstDoesNotLockTheRealJobOutOnceItLeaves() throws Exception {
    ManagedChannel channel = start(Limits.defaults());
    RankConnection squatter = connected(channel, hello("train", 0, 4, 1));

    Status refused = new RankConnection(channel).send(hello("train", 0, 16, 2)).end();
    assertThat(refused.getCode()).as("retryable, so the real rank's reporter tries again").isEqualTo(Status.Code.ABORTED);
    assertThat(refused.getDescription()).contains("job train has world size 4 with 1 live ranks");

    squatter.close();
    squatter.end();
    await().atMost(Duration.ofSeconds(5)).ignoreExceptions().untilAsserted(() -> {
      RankConnection real = new RankConnection(channel).send(hello("train", 0, 16, 2));
      assertThat(real.next().hasWelcome()).isTrue();
    });
    var summary = DiagnosisGrpc.newBlockingStub(channel).getJobStatus(GetJobStatusRequest.newBuilder()
        .setJobId("train").build()).getSummary();
    assertThat(summary.getWorldSize()).isEqualTo(16);
    assertThat(summary.getRanksConnected()).isEqualTo(1);
  }

  @Test
  void processGroupsBeyondTheLimitEndTheStreamWithResourceExhausted() throws Exception {
    ManagedChannel channel = start(Limits.builder().maxGroupsPerRank(2).build());
    RankConnection rank = connected(channel, hello("job", 0, 1, 1));
    rank.send(RankMessage.newBuilder().setProcessGroups(ProcessGroupUpdate.newBuilder()
        .addProcessGroups(group("1", 1)).addProcessGroups(group("2", 1))).build());
    Status status = rank.end();
    assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription()).isEqualTo("rank 0 of job job announced more than 2 process groups");
  }

  @Test
  void atTheJobLimitTheOldestIdleJobMakesRoomAndLiveJobsAreNeverEvicted() throws Exception {
    ManagedChannel channel = start(Limits.builder().maxJobs(2).build());
    RankConnection ended = connected(channel, hello("ended", 0, 1, 1));
    ended.close();
    ended.end();
    connected(channel, hello("live", 0, 1, 2));
    // The job whose rank left is forgotten for the new one at once, not after the hour a job takes to expire.
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
      RankConnection next = new RankConnection(channel).send(hello("new", 0, 1, 3));
      assertThat(next.next().hasWelcome()).isTrue();
    });
    var jobs = DiagnosisGrpc.newBlockingStub(channel).listJobs(ListJobsRequest.getDefaultInstance()).getJobsList();
    assertThat(jobs).extracting(j -> j.getJobId()).containsExactly("live", "new");
    assertThat(daemon.daemon().registry().evictions()).isEqualTo(1);

    Status refused = new RankConnection(channel).send(hello("fourth", 0, 1, 4)).end();
    assertThat(refused.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(refused.getDescription()).isEqualTo("the daemon tracks 2 jobs, its limit, and every one has a rank "
        + "connected or an incident open; job fourth is refused until one ends");
  }

  @Test
  void concurrentDiagnoseNowCallsShareOneDiagnosisAndTheNextIsRefusedWithTheWait() throws Exception {
    ManagedChannel channel = start(Limits.builder().diagnoseInterval(Duration.ofMinutes(5)).build());
    RankConnection rank = connected(channel, hello("job", 0, 1, 1));

    // The rank never answers: the first diagnosis waits out its 3 s deadline, and the second call, made meanwhile,
    // can only get a report by joining it (a new one would be refused for the interval).
    CompletableFuture<ReportEnvelope> first = diagnoseNow(channel, "job", 3_000);
    assertThat(rank.next().hasDumpRequest()).isTrue();
    CompletableFuture<ReportEnvelope> second = diagnoseNow(channel, "job", 3_000);

    String id = first.get(20, TimeUnit.SECONDS).getSummary().getReportId();
    assertThat(second.get(20, TimeUnit.SECONDS).getSummary().getReportId()).isEqualTo(id);
    assertThatThrownBy(() -> diagnoseNow(channel, "job", 10_000).get(20, TimeUnit.SECONDS))
        .hasCauseInstanceOf(StatusRuntimeException.class)
        .satisfies(e -> {
          Status s = Status.fromThrowable(e.getCause());
          assertThat(s.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
          assertThat(s.getDescription()).startsWith("job job was diagnosed on demand").contains("ask again in");
        });
  }

  @Test
  void aRankIsSentEachDumpRequestOnceHoweverOftenItsStreamIsAskedIt() throws Exception {
    // A gather asks every linked rank, and a rank whose stream is welcomed while it runs is asked again by the
    // gather: when the two meet on one stream the rank would take a second snapshot, and a rank that answers in
    // turn (as this one does) answers the next request with the first one's id.
    ManagedChannel channel = start(Limits.defaults());
    RankConnection rank = connected(channel, hello("job", 0, 1, 1));
    var job = daemon.daemon().registry().find("job").orElseThrow();
    DumpRequest first = DumpRequest.newBuilder().setRequestId(1_001).setDeadlineMs(1_000).build();
    DumpRequest second = DumpRequest.newBuilder().setRequestId(1_002).setDeadlineMs(1_000).build();

    assertThat(job.requestDumps(first, Set.of())).containsOnlyKeys(0);
    assertThat(job.requestDumps(first, Set.of())).containsOnlyKeys(0);
    job.requestDumps(second, Set.of());

    assertThat(rank.next().getDumpRequest().getRequestId()).isEqualTo(1_001);
    assertThat(rank.next().getDumpRequest().getRequestId()).as("the second request, not the first again")
        .isEqualTo(1_002);
  }

  @Test
  void aHugeSnapshotDeadlineIsClampedToTheLimit() throws Exception {
    ManagedChannel channel = start(Limits.builder().maxSnapshotDeadline(Duration.ofSeconds(3)).build());
    RankConnection rank = connected(channel, hello("job", 0, 1, 1));
    CompletableFuture<ReportEnvelope> report = diagnoseNow(channel, "job", Long.MAX_VALUE / 2);
    DumpRequest request = rank.next().getDumpRequest();
    assertThat(request.getDeadlineMs()).isEqualTo(3_000);
    answer(rank, request);
    assertThat(report.get(20, TimeUnit.SECONDS).getSummary().getJobId()).isEqualTo("job");
  }

  @Test
  void watchersBeyondTheLimitAreRefused() throws Exception {
    ManagedChannel channel = start(Limits.builder().maxWatchers(1).build());
    var firstCall = channel.newCall(dev.frdiag.proto.v1.DiagnosisGrpc.getWatchIncidentsMethod(),
        io.grpc.CallOptions.DEFAULT);
    Watched first = Watched.start(firstCall, 1);
    var secondCall = channel.newCall(dev.frdiag.proto.v1.DiagnosisGrpc.getWatchIncidentsMethod(),
        io.grpc.CallOptions.DEFAULT);
    Watched second = Watched.start(secondCall, 1);
    // Whichever call the daemon took second is refused; the other stays open.
    Status status = (Status) CompletableFuture.anyOf(first.closed, second.closed).get(5, TimeUnit.SECONDS);
    assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription()).isEqualTo("the daemon already serves 1 incident watchers, its limit");
    assertThat(first.closed.isDone() && second.closed.isDone()).as("one watcher is still served").isFalse();
    firstCall.cancel("done", null);
    secondCall.cancel("done", null);
  }

  @Test
  void aWatcherThatStopsReadingIsCutOffAndTheNextWatcherIsServed() throws Exception {
    ManagedChannel channel = start(Limits.builder().watcherBacklog(2).diagnoseInterval(Duration.ZERO).build());
    RankConnection rank = connected(channel, hello("job", 0, 1, 1));
    var slowCall = channel.newCall(DiagnosisGrpc.getWatchIncidentsMethod(), io.grpc.CallOptions.DEFAULT);
    // Asks for no message at all: the daemon may not push anything to it, as to a client that stopped reading.
    Watched slow = Watched.start(slowCall, 0);

    List<String> reports = new ArrayList<>();
    for (int i = 0; i < 10 && !slow.closed.isDone(); i++) {
      CompletableFuture<ReportEnvelope> report = diagnoseNow(channel, "job", 10_000);
      answer(rank, rank.next().getDumpRequest());
      reports.add(report.get(20, TimeUnit.SECONDS).getSummary().getReportId());
    }
    Status status = slow.closed.get(5, TimeUnit.SECONDS);
    assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription()).startsWith("this watcher fell 2 reports behind (").endsWith(
        " bytes) and was cut off; reconnect and read faster");
    assertThat(slow.received).isEmpty();

    var nextCall = channel.newCall(DiagnosisGrpc.getWatchIncidentsMethod(), io.grpc.CallOptions.DEFAULT);
    Watched next = Watched.start(nextCall, 10);
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
      CompletableFuture<ReportEnvelope> report = diagnoseNow(channel, "job", 10_000);
      answer(rank, rank.next().getDumpRequest());
      report.get(20, TimeUnit.SECONDS);
      assertThat(next.received).isNotEmpty();
    });
    nextCall.cancel("done", null);
  }

  @Test
  void aWatcherThatStopsReadingIsCutOffByTheBytesOfItsReportsToo() throws Exception {
    ManagedChannel channel = start(Limits.builder().watcherBacklog(10_000).watcherBacklogBytes(64 * 1024)
        .diagnoseInterval(Duration.ZERO).build());
    RankConnection rank = connected(channel, hello("job", 0, 1, 1));
    var slowCall = channel.newCall(DiagnosisGrpc.getWatchIncidentsMethod(), io.grpc.CallOptions.DEFAULT);
    Watched slow = Watched.start(slowCall, 0);

    for (int i = 0; i < 500 && !slow.closed.isDone(); i++) {
      CompletableFuture<ReportEnvelope> report = diagnoseNow(channel, "job", 10_000);
      answer(rank, rank.next().getDumpRequest());
      report.get(20, TimeUnit.SECONDS);
    }
    Status status = slow.closed.get(5, TimeUnit.SECONDS);
    assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription()).matches("this watcher fell \\d+ reports behind \\((\\d+) bytes\\) and was "
        + "cut off; reconnect and read faster");
    long behind = Long.parseLong(status.getDescription().replaceAll(".*\\((\\d+) bytes\\).*", "$1"));
    assertThat(behind).as("cut off by the bytes, with dozens of reports to go before the count")
        .isBetween(32 * 1024L, 64 * 1024L);
    assertThat(daemon.daemon().registry().budget().refusals().get(StateBudget.State.WATCHERS))
        .containsEntry(StateBudget.Scope.WATCHER, 1L);
  }

  /** A raw WatchIncidents call whose reads are counted out by hand. */
  private static final class Watched extends ClientCall.Listener<ReportEnvelope> {
    final List<ReportEnvelope> received = new java.util.concurrent.CopyOnWriteArrayList<>();
    final CompletableFuture<Status> closed = new CompletableFuture<>();

    static Watched start(ClientCall<WatchIncidentsRequest, ReportEnvelope> call, int reads) {
      Watched w = new Watched();
      call.start(w, new Metadata());
      call.sendMessage(WatchIncidentsRequest.newBuilder().setJobId("").build());
      call.halfClose();
      if (reads > 0) {
        call.request(reads);
      }
      return w;
    }

    @Override
    public void onMessage(ReportEnvelope message) {
      received.add(message);
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      closed.complete(status);
    }
  }
}
