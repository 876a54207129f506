package dev.frdiag.daemon.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.store.ReportStore;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.report.Report;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What an investigation leaves behind, and whose replies it takes. */
class InvestigatorTest {
  @TempDir
  Path dataDir;

  private static final ProcessGroup SOLO = ProcessGroup.newBuilder().setName("0").addRanks(0).setGlobalRankStride(1)
      .build();

  @Test
  void aGatherThatEndsEarlyLeavesNoScheduledTaskWaitingOutItsDeadline() throws Exception {
    ScheduledThreadPoolExecutor scheduler = new ScheduledThreadPoolExecutor(1);
    scheduler.setRemoveOnCancelPolicy(true);
    try {
      Investigator investigator = new Investigator(new ReportStore(dataDir), Runnable::run, scheduler, Instant::now,
          System::nanoTime, Duration.ofSeconds(30));
      Job job = new JobRegistry(16).getOrCreate("j", 1, 0);
      AtomicReference<Long> asked = new AtomicReference<>();
      job.attach(RankIdentity.newBuilder().setJobId("j").setWorldSize(1).setPid(1).build(), List.of(SOLO),
          request -> asked.set(request.getRequestId()), "s", 0, System.nanoTime(), 0);

      for (int i = 0; i < 20; i++) {
        var report = investigator.investigate(job, Report.Trigger.ON_DEMAND, Duration.ofHours(1));
        assertThat(scheduler.getQueue()).as("the gather's quorum check and its deadline, on the daemon's scheduler")
            .hasSize(2);
        job.dumpReply(0, "s", DumpReply.newBuilder().setRequestId(asked.get()).build());
        report.get(10, TimeUnit.SECONDS);
        assertThat(scheduler.getQueue()).as("tasks of a finished gather").isEmpty();
      }
    } finally {
      scheduler.shutdownNow();
    }
  }

  @Test
  void aReplyFromAStreamOtherThanTheOneAskedIsNotTheRanksSnapshot() throws Exception {
    ScheduledThreadPoolExecutor scheduler = new ScheduledThreadPoolExecutor(1);
    try {
      Investigator investigator = new Investigator(new ReportStore(dataDir), Runnable::run, scheduler, Instant::now,
          System::nanoTime, Duration.ofSeconds(30));
      Job job = new JobRegistry(16).getOrCreate("j", 1, 0);
      AtomicReference<Long> asked = new AtomicReference<>();
      job.attach(RankIdentity.newBuilder().setJobId("j").setWorldSize(1).setPid(1).build(), List.of(SOLO),
          request -> {
            asked.set(request.getRequestId());
            // An impostor answers first, for the real rank.
            job.dumpReply(0, "impostor", DumpReply.newBuilder().setRequestId(request.getRequestId())
                .build());
          }, "real", 0, System.nanoTime(), 0);

      var report = investigator.investigate(job, Report.Trigger.ON_DEMAND, Duration.ofMillis(500));
      Report done = report.get(10, TimeUnit.SECONDS);
      assertThat(done.timeline()).extracting(Report.TimelineEntry::event)
          .anySatisfy(e -> assertThat(e).startsWith("0 of 1 snapshots received"));
      assertThat(asked.get()).isNotNull();
    } finally {
      scheduler.shutdownNow();
    }
  }
}
