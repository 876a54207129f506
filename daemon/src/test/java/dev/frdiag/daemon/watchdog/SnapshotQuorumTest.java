package dev.frdiag.daemon.watchdog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.frdiag.daemon.settings.DaemonSettings;
import dev.frdiag.daemon.InProcessDaemon;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.registry.RankLink;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SnapshotQuorumTest {
  @TempDir
  Path dataDir;
  /** The investigators' clock, which the tests move. */
  private final AtomicLong nanos = new AtomicLong(42);
  private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();

  @AfterEach
  void stopScheduler() {
    scheduler.shutdownNow();
  }

  @Test
  void aStragglerDoesNotHoldTheDiagnosisUntilTheDeadline() throws Exception {
    try (InProcessDaemon served = new InProcessDaemon(DaemonSettings.builder().dataDir(dataDir).build())) {
      ManagedChannel channel = served.channel();
      List<StreamObserver<RankMessage>> streams = new ArrayList<>();
      // 101 ranks: the 1 % the quorum may leave out is one rank.
      int worldSize = 101;
      ProcessGroup world = world(worldSize);
      for (int r = 0; r < worldSize; r++) {
        boolean answers = r != 2;
        StreamObserver<RankMessage>[] self = new StreamObserver[1];
        self[0] = CollectorGrpc.newStub(channel).connect(new StreamObserver<>() {
          @Override
          public void onNext(DaemonMessage m) {
            if (answers && m.hasDumpRequest()) {
              synchronized (self) {
                self[0].onNext(RankMessage.newBuilder().setDumpReply(DumpReply.newBuilder()
                    .setRequestId(m.getDumpRequest().getRequestId())).build());
              }
            }
          }

          @Override
          public void onError(Throwable t) {
          }

          @Override
          public void onCompleted() {
          }
        });
        synchronized (self) {
          self[0].onNext(RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
              .setJobId("q").setGlobalRank(r).setWorldSize(worldSize).setHostname("n").setPid(r))
              .addProcessGroups(world)).build());
        }
        streams.add(self[0]);
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> served.daemon().registry().find("q")
          .map(j -> j.summary().getRanksConnected() == worldSize).orElse(false));

      // The deadline is a minute; the answer must not wait for it.
      var envelope = DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS)
          .diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId("q").setSnapshotDeadlineMs(60_000).build());
      Report report = ReportJson.read(envelope.getReportJson());
      assertThat(report.timeline()).anySatisfy(t -> assertThat(t.event()).startsWith("100 of 101 snapshots received"));
      streams.forEach(StreamObserver::onCompleted);
    }
  }

  @Test
  void repliesMustHaveStoppedForAWhileOnTheInvestigatorsClockBeforeAQuorumIsFinal() throws Exception {
    Investigator investigator = investigator();
    Job job = new JobRegistry(16).getOrCreate("q", 101, 0);
    for (int r = 0; r < 101; r++) {
      // Rank 2 is the straggler; the others answer at once.
      attach(job, r, "s" + r, r == 2 ? request -> { } : answering(job, r, "s" + r));
    }

    CompletableFuture<Report> report = investigator.investigate(job, Report.Trigger.ON_DEMAND, Duration.ofSeconds(60));
    // The quorum is checked every 50 ms of real time, but the quiet it needs is measured on the injected clock.
    await().during(Duration.ofMillis(600)).atMost(Duration.ofSeconds(5)).until(() -> !report.isDone());
    nanos.addAndGet(Investigator.QUORUM_QUIET.toNanos());
    assertThat(report.get(5, TimeUnit.SECONDS).timeline())
        .anySatisfy(t -> assertThat(t.event()).startsWith("100 of 101 snapshots received"));
  }

  @Test
  void aRankWhoseStreamWasDownWhenTheRequestWentOutIsAskedOnItsNewStream() throws Exception {
    Investigator investigator = investigator();
    Job job = new JobRegistry(16).getOrCreate("q", 4, 0);
    // Rank 0 answers when the test says, so that the snapshots are still being gathered when rank 3 is back.
    AtomicLong heldRequest = new AtomicLong(-1);
    attach(job, 0, "s0", request -> heldRequest.set(request.getRequestId()));
    for (int r = 1; r < 4; r++) {
      attach(job, r, "s" + r, answering(job, r, "s" + r));
    }
    // Rank 3's agent opens a new stream (as it does when it learns the rank's pid): the old one is gone, the new
    // one not there yet, when the request goes out.
    job.lost(3, "s3", nanos.get());

    CompletableFuture<Report> report = investigator.investigate(job, Report.Trigger.ON_DEMAND, Duration.ofSeconds(60));
    RankLink reopened = answering(job, 3, "s3b");
    attach(job, 3, "s3b", reopened);
    assertThat(report).isNotDone();
    job.dumpReply(0, "s0", DumpReply.newBuilder().setRequestId(heldRequest.get()).build());

    assertThat(report.get(5, TimeUnit.SECONDS).timeline())
        .anySatisfy(t -> assertThat(t.event()).startsWith("4 of 4 snapshots received"));
  }

  /** An investigator on the test's clock ({@link #nanos}) that analyses on the calling thread. */
  private Investigator investigator() {
    return new Investigator(new ReportStore(dataDir), Runnable::run, scheduler,
        () -> Instant.EPOCH.plusNanos(nanos.get()), nanos::get, Duration.ofSeconds(30));
  }

  /** Process group "0" of every rank of a job of {@code size}. */
  private static ProcessGroup world(int size) {
    ProcessGroup.Builder world = ProcessGroup.newBuilder().setName("0").setGlobalRankStride(1);
    for (int r = 0; r < size; r++) {
      world.addRanks(r);
    }
    return world.build();
  }

  /** Attaches {@code rank} of {@code job}, in the world group, as stream {@code session} served by {@code link}. */
  private void attach(Job job, int rank, String session, RankLink link) {
    RankIdentity identity = RankIdentity.newBuilder().setJobId(job.id()).setGlobalRank(rank)
        .setWorldSize(job.worldSize()).setHostname("n").setPid(rank).build();
    job.attach(identity, List.of(world(job.worldSize())), link, session, 0, nanos.get(), 0);
  }

  /** A stream that answers every dump request at once, as session {@code session} of {@code rank}. */
  private static RankLink answering(Job job, int rank, String session) {
    return request -> job.dumpReply(rank, session,
        DumpReply.newBuilder().setRequestId(request.getRequestId()).build());
  }
}
