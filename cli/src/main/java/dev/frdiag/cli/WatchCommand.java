package dev.frdiag.cli;

import dev.frdiag.analysis.Ranks;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.ReportSummary;
import dev.frdiag.proto.v1.WatchIncidentsRequest;
import dev.frdiag.report.UntrustedText;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.Iterator;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code fr-diagnose watch [JOB]}: one line per report as the daemon writes it, until stopped. */
@Command(name = "watch", mixinStandardHelpOptions = true,
    description = {"Follows incidents live: one line per report as the daemon writes it (of JOB, or of every job "
        + "you may read), until Ctrl-C. When the daemon goes away it says so and reconnects."})
final class WatchCommand implements Callable<Integer> {
  static final long FIRST_BACKOFF_MS = 1000;
  static final long MAX_BACKOFF_MS = 30_000;

  @CommandLine.ParentCommand
  FrDiagnose parent;

  @Parameters(index = "0", arity = "0..1", paramLabel = "JOB", description = "Only this job's reports.")
  String job = "";

  @Option(names = "--count", paramLabel = "N", description = "Stop after N reports (default: never).")
  long count = Long.MAX_VALUE;

  @Override
  public Integer call() throws InterruptedException {
    if (count < 1) {
      throw new IllegalArgumentException("--count must be at least 1, got " + count);
    }
    PrintWriter out = parent.spec.commandLine().getOut();
    PrintWriter err = parent.spec.commandLine().getErr();
    long seen = 0;
    long backoff = FIRST_BACKOFF_MS;
    while (true) {
      ManagedChannel channel = parent.daemon.open(parent.security);
      try {
        Iterator<ReportEnvelope> reports = DiagnosisGrpc.newBlockingStub(channel)
            .watchIncidents(WatchIncidentsRequest.newBuilder().setJobId(job).build());
        err.println("fr-diagnose: watching " + (job.isEmpty() ? "every job" : "job " + UntrustedText.line(job))
            + " at " + parent.daemon + " (Ctrl-C to stop)");
        err.flush();
        while (reports.hasNext()) {
          backoff = FIRST_BACKOFF_MS;
          out.println(line(reports.next().getSummary()));
          out.flush();
          if (++seen >= count) {
            return ExitCode.NO_HANG;
          }
        }
        err.println("fr-diagnose: the daemon at " + parent.daemon + " ended the watch; reconnecting");
      } catch (StatusRuntimeException e) {
        Status.Code code = e.getStatus().getCode();
        if (code != Status.Code.UNAVAILABLE && code != Status.Code.RESOURCE_EXHAUSTED
            && code != Status.Code.CANCELLED) {
          throw e;
        }
        err.println("fr-diagnose: the daemon at " + parent.daemon + " went away (" + code + "); reconnecting in "
            + backoff / 1000.0 + " s");
      } finally {
        channel.shutdownNow();
      }
      err.flush();
      TimeUnit.MILLISECONDS.sleep(backoff);
      backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
    }
  }

  /** One report: id, time, job, verdict, symptom, culprits, headline. */
  static String line(ReportSummary r) {
    return String.format("%s  %s  %s  %s %s  culprits %s  %s", UntrustedText.line(r.getReportId()),
        Instant.ofEpochMilli(r.getCreatedAtMs()), UntrustedText.line(r.getJobId()), r.getVerdict(), r.getSymptom(),
        r.getCulpritRanksCount() == 0 ? "none" : Ranks.compact(r.getCulpritRanksList()),
        UntrustedText.line(r.getHeadline()));
  }
}
