package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.daemon.DaemonMain;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.GetReportRequest;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.ListReportsRequest;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.ReportSummary;
import dev.frdiag.proto.v1.WatchIncidentsRequest;
import dev.frdiag.report.ReportJson;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The daemon killed with SIGKILL at random moments while reports are being made, and restarted on the same data
 * dir: every report it announced (returned by DiagnoseNow, or pushed to a watcher) is readable afterwards, and
 * nothing it serves is half-written.
 */
class DaemonCrashTest {
  private static final Pattern LISTENING = Pattern.compile("fr-daemon listening on 127\\.0\\.0\\.1:(\\d+)");
  private static final int ROUNDS = 8;

  @TempDir
  Path dataDir;

  /** A daemon in a process of its own. */
  private record DaemonProcess(Process process, int port) {}

  private DaemonProcess startDaemon() throws IOException, InterruptedException {
    Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx256m", "-cp", System.getProperty("java.class.path"), DaemonMain.class.getName(),
        "--bind", "127.0.0.1", "--port", "0", "--data-dir", dataDir.toString(), "--diagnose-interval", "1ms",
        "--snapshot-deadline", "2s", "--metrics-port", "0", "--web-port", "0").redirectErrorStream(true).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    StringBuilder seen = new StringBuilder();
    String line;
    while ((line = out.readLine()) != null) {
      seen.append(line).append('\n');
      Matcher m = LISTENING.matcher(line);
      if (m.find()) {
        int port = Integer.parseInt(m.group(1));
        // Keep draining its output so it never blocks on a full pipe.
        Thread drain = new Thread(() -> {
          try {
            while (out.readLine() != null) {
              // discarded
            }
          } catch (IOException ignored) {
            // The process was killed.
          }
        }, "daemon-output");
        drain.setDaemon(true);
        drain.start();
        return new DaemonProcess(p, port);
      }
    }
    throw new AssertionError("the daemon did not start:\n" + seen);
  }

  private static ManagedChannel channel(int port) {
    return NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
  }

  /** One rank of job "chaos" that answers every dump request at once with one stuck all_reduce. */
  private static void connectRank(ManagedChannel channel) {
    StreamObserver<RankMessage>[] out = new StreamObserver[1];
    out[0] = CollectorGrpc.newStub(channel).connect(new StreamObserver<>() {
      @Override
      public void onNext(DaemonMessage m) {
        if (m.hasDumpRequest()) {
          synchronized (out) {
            out[0].onNext(RankMessage.newBuilder().setDumpReply(DumpReply.newBuilder()
                .setRequestId(m.getDumpRequest().getRequestId()).addRecords(CollectiveRecord.newBuilder()
                    .setRecordId(1).setProcessGroup("0").setCollectiveSeq(1).setOp("all_reduce")
                    .setState(CollectiveState.STARTED).setTimeCreatedNs(1_700_000_000_000_000_000L))).build());
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
    synchronized (out) {
      out[0].onNext(RankMessage.newBuilder().setHello(Hello.newBuilder().setIdentity(RankIdentity.newBuilder()
          .setJobId("chaos").setGlobalRank(0).setWorldSize(1).setHostname("node0").setPid(1))
          .addProcessGroups(ProcessGroup.newBuilder().setName("0").addRanks(0).setGlobalRankStride(1))).build());
    }
  }

  @Test
  void everyAnnouncedReportSurvivesSigkillAndNothingHalfWrittenIsServed() throws Exception {
    long seed = System.nanoTime();
    Random random = new Random(seed);
    Set<String> announced = ConcurrentHashMap.newKeySet();
    DaemonProcess daemon = startDaemon();
    try {
      for (int round = 0; round < ROUNDS; round++) {
        ManagedChannel channel = channel(daemon.port());
        AtomicBoolean running = new AtomicBoolean(true);
        CountDownLatch reportsFlowing = new CountDownLatch(1);
        try {
          connectRank(channel);
          DiagnosisGrpc.newStub(channel).watchIncidents(WatchIncidentsRequest.getDefaultInstance(),
              new StreamObserver<>() {
                @Override
                public void onNext(ReportEnvelope e) {
                  announced.add(e.getSummary().getReportId());
                  reportsFlowing.countDown();
                }

                @Override
                public void onError(Throwable t) {
                }

                @Override
                public void onCompleted() {
                }
              });
          Thread driver = new Thread(() -> {
            while (running.get()) {
              try {
                ReportEnvelope e = DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS)
                    .diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId("chaos").build());
                announced.add(e.getSummary().getReportId());
                reportsFlowing.countDown();
              } catch (RuntimeException notAnnounced) {
                // Not connected yet, or the daemon just died: that report was never announced.
              }
            }
          }, "diagnose-now");
          driver.start();
          // The kill lands at a random moment while reports are being made and written: once the first of this
          // round is announced (a cold daemon takes a while to make it), within the next second.
          assertThat(reportsFlowing.await(60, TimeUnit.SECONDS)).as("seed %d round %d: a report was announced",
              seed, round).isTrue();
          long killAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(random.nextInt(1000));
          while (System.nanoTime() < killAt) {
            if (daemon.process().waitFor(killAt - System.nanoTime(), TimeUnit.NANOSECONDS)) {
              throw new AssertionError("the daemon exited on its own with " + daemon.process().exitValue());
            }
          }
          daemon.process().destroyForcibly();
          assertThat(daemon.process().waitFor(10, TimeUnit.SECONDS)).isTrue();
          running.set(false);
          driver.join(TimeUnit.SECONDS.toMillis(10));
        } finally {
          channel.shutdownNow();
        }

        daemon = startDaemon();
        ManagedChannel check = channel(daemon.port());
        try {
          // A deadline is a point in time, so each call gets its own: one for them all runs out on a loaded
          // machine part-way through a long list of reports.
          var stub = DiagnosisGrpc.newBlockingStub(check);
          for (String id : announced) {
            ReportEnvelope e = stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                .getReport(GetReportRequest.newBuilder().setReportId(id).build());
            assertThat(ReportJson.read(e.getReportJson()).reportId()).as("seed %d round %d", seed, round)
                .isEqualTo(id);
          }
          List<ReportSummary> served = announced.isEmpty() ? List.of() : stub.withDeadlineAfter(10, TimeUnit.SECONDS)
              .listReports(ListReportsRequest.newBuilder().setJobId("chaos").build()).getReportsList();
          for (ReportSummary s : served) {
            ReportEnvelope e = stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                .getReport(GetReportRequest.newBuilder().setReportId(s.getReportId()).build());
            assertThat(ReportJson.read(e.getReportJson()).job()).as("seed %d round %d: %s", seed, round,
                s.getReportId()).isEqualTo("chaos");
          }
        } finally {
          check.shutdownNow();
        }
      }
      assertThat(announced).as("seed %d: reports were made between the kills", seed).hasSizeGreaterThan(ROUNDS);
      try (Stream<Path> files = Files.walk(dataDir.resolve("reports"))) {
        for (Path f : files.filter(f -> f.toString().endsWith(".json")).toList()) {
          assertThat(ReportJson.read(Files.readString(f)).reportId()).as("seed %d: %s parses", seed, f).isNotEmpty();
        }
      }
    } finally {
      daemon.process().destroyForcibly();
    }
  }
}
