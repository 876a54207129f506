package dev.frdiag.cli;

import dev.frdiag.analysis.Ranks;
import dev.frdiag.command.ClientSecurity;
import dev.frdiag.command.CommandRunner;
import dev.frdiag.proto.Contract;
import dev.frdiag.proto.v1.DiagnoseNowRequest;
import dev.frdiag.proto.v1.DiagnosisGrpc;
import dev.frdiag.proto.v1.GetReportRequest;
import dev.frdiag.proto.v1.JobSummary;
import dev.frdiag.proto.v1.ListJobsRequest;
import dev.frdiag.proto.v1.ListReportsRequest;
import dev.frdiag.proto.v1.ListReportsResponse;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.ReportSummary;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportJson;
import dev.frdiag.report.UntrustedText;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/** {@code fr-diagnose}: asks the daemon which rank diverged, on which collective, and why. */
@Command(name = "fr-diagnose", mixinStandardHelpOptions = true,
    description = {"Prints the hang diagnosis of a job: the culprit rank(s), the collective, the symptom and the "
        + "evidence.", "With a job id it prints the job's newest report, asking the daemon to diagnose now when "
        + "none is stored."},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {"0:no hang", "1:hang diagnosed", "2:usage error",
        "3:daemon unreachable, or job/report unknown", "4:insufficient evidence for a verdict", "5:other failure",
        "6:out of memory (give it more with FRDIAG_JAVA_OPTS=-Xmx8g)"})
public final class FrDiagnose implements Callable<Integer> {
  @Option(names = "--daemon", paramLabel = "HOST:PORT", converter = DaemonAddress.Converter.class,
      defaultValue = Contract.DEFAULT_DAEMON, scope = CommandLine.ScopeType.INHERIT,
      description = "Daemon to ask (default ${DEFAULT-VALUE}).")
  DaemonAddress daemon;

  @CommandLine.Mixin
  ClientSecurity security;

  @Option(names = "--json", scope = CommandLine.ScopeType.INHERIT,
      description = "Print frdiag.report/v1 JSON instead of text.")
  boolean json;

  @Option(names = "--html", paramLabel = "FILE", scope = CommandLine.ScopeType.INHERIT,
      description = "Also write the report as one self-contained HTML page (grid of ranks × seqs, cascade, "
          + "evidence, stacks) to FILE, to open in a browser or attach to a ticket.")
  Path html;

  @Option(names = "--now", description = "Diagnose now even when a report is stored.")
  boolean now;

  @Option(names = "--timeout", defaultValue = "30", description = "Seconds to wait for the daemon (default 30).")
  long timeoutSeconds;

  @Parameters(index = "0", arity = "0..1", paramLabel = "JOB", description = "Job id.")
  String job;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  /** Whether --json was given (anywhere on the command line). */
  public boolean json() {
    return json;
  }

  /** Held so the setting stays: gRPC logs through java.util.logging, whose default prints stack traces. */
  private static final java.util.logging.Logger GRPC_LOG = java.util.logging.Logger.getLogger("io.grpc");

  public static void main(String[] args) {
    // What went wrong with a call is said once, on one line, by the handler below.
    GRPC_LOG.setLevel(java.util.logging.Level.OFF);
    // Encoded before it is needed: with the heap exhausted, even joining or encoding strings can fail, and reading
    // threads may still be filling what the failure freed while it is written.
    byte[] outOfMemory = ("fr-diagnose: out of memory (" + Runtime.getRuntime().maxMemory() / (1 << 20)
        + " MB heap); give it more, e.g. FRDIAG_JAVA_OPTS=-Xmx8g" + System.lineSeparator()).getBytes();
    int code;
    try {
      code = run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true));
    } catch (Error e) {
      if (!outOfMemory(e)) {
        throw e;
      }
      code = ExitCode.OUT_OF_MEMORY;
      try {
        System.err.write(outOfMemory, 0, outOfMemory.length);
        System.err.flush();
      } catch (OutOfMemoryError again) {
        // The exit code still says it.
      }
    }
    System.exit(code);
  }

  /**
   * Whether {@code e} is running out of memory, also as it shows in another thread: a class whose initializer ran out
   * of memory on a reading thread fails every later use with a NoClassDefFoundError that names that error.
   */
  private static boolean outOfMemory(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof OutOfMemoryError
          || t instanceof ExceptionInInitializerError && String.valueOf(t.getMessage()).contains("OutOfMemoryError")) {
        return true;
      }
    }
    return false;
  }

  /** Runs the command with output going to {@code out} and one-line errors to {@code err}; returns the exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    CommandLine cmd = new CommandLine(new FrDiagnose());
    // A command line that starts with a subcommand's name is that subcommand's: picocli's model of the others (their
    // options, read by reflection) was a sixth of a small analysis' time, for nothing. Any other command line (a job
    // id, an option, --help, a misspelt subcommand) gets them all.
    Map<String, Class<?>> subcommands = subcommands(Jobs.class, Reports.class, ShowReport.class, WatchCommand.class,
        NodesCommand.class, AnalyzeCommand.class, TopologyCommand.class);
    Class<?> named = args.length == 0 ? null : subcommands.get(args[0]);
    for (Class<?> subcommand : named == null ? subcommands.values() : List.of(named)) {
      cmd.addSubcommand(subcommand);
    }
    return CommandRunner.of(cmd).output(out, err).on(StatusRuntimeException.class, FrDiagnose::failed)
        .failures(ExitCode.FAILURE).execute(args);
  }

  /** The subcommands by name, in the order help lists them. */
  private static Map<String, Class<?>> subcommands(Class<?>... commands) {
    Map<String, Class<?>> byName = new LinkedHashMap<>();
    for (Class<?> c : commands) {
      byName.put(c.getAnnotation(Command.class).name(), c);
    }
    return byName;
  }

  /** A call the daemon failed: its status, said so a user knows what to do, and the exit code it documents. */
  private static CommandRunner.Outcome failed(StatusRuntimeException s, CommandLine commandLine) {
    boolean unreachable = s.getStatus().getCode() == io.grpc.Status.Code.UNAVAILABLE
        || s.getStatus().getCode() == io.grpc.Status.Code.DEADLINE_EXCEEDED;
    CommandLine root = commandLine;
    while (root.getParent() != null) {
      root = root.getParent();
    }
    String where = root.getCommand() instanceof FrDiagnose f ? f.daemon.toString() : "the daemon";
    boolean known = s.getStatus().getCode() == io.grpc.Status.Code.NOT_FOUND;
    if (Contract.SPEAKS_TLS.equals(s.getStatus().getDescription())) {
      return new CommandRunner.Outcome(s.getStatus().getCode() + ": the daemon at " + where + " speaks TLS: give "
          + "--tls-ca PEM (the CA that signed its certificate), and --token-file or --tls-cert/--tls-key if it asks "
          + "who you are", ExitCode.UNREACHABLE_OR_UNKNOWN);
    }
    return new CommandRunner.Outcome(s.getStatus().getCode() + ": " + (unreachable
        ? "cannot reach the daemon at " + where + " (" + describe(s) + "); start one with bin/fr-daemon"
        : describe(s)), unreachable || known ? ExitCode.UNREACHABLE_OR_UNKNOWN : ExitCode.FAILURE);
  }

  private static String describe(StatusRuntimeException s) {
    Throwable root = s;
    while (root.getCause() != null) {
      root = root.getCause();
    }
    if (root instanceof java.net.UnknownHostException) {
      return "cannot resolve host '" + root.getMessage().replaceFirst(":.*", "") + "'";
    }
    String said = String.valueOf(root.getMessage()) + " " + s.getStatus().getDescription();
    if (said.contains("First received frame was not SETTINGS") || said.contains("HTTP status code")) {
      return "it does not speak gRPC: is it an frdiag daemon?";
    }
    if (root != s && root.getMessage() != null) {
      return root.getMessage();
    }
    return s.getStatus().getDescription() != null ? s.getStatus().getDescription() : s.getStatus().getCode().toString();
  }

  @Override
  public Integer call() {
    if (job == null) {
      spec.commandLine().usage(spec.commandLine().getOut());
      return ExitCode.USAGE;
    }
    return withStub(daemon, security, timeoutSeconds, stub -> {
      ReportEnvelope envelope = null;
      if (!now) {
        ListReportsResponse reports = stub.listReports(ListReportsRequest.newBuilder().setJobId(job).build());
        if (reports.getReportsCount() > 0) {
          envelope = stub.getReport(GetReportRequest.newBuilder()
              .setReportId(reports.getReports(0).getReportId()).build());
        }
      }
      if (envelope == null) {
        envelope = stub.diagnoseNow(DiagnoseNowRequest.newBuilder().setJobId(job).build());
      }
      return print(envelope);
    });
  }

  int print(ReportEnvelope envelope) {
    return show(ReportJson.read(envelope.getReportJson()));
  }

  /**
   * Prints {@code report} as text, or JSON with --json, and writes its page with --html; returns the exit code its
   * verdict gives.
   */
  int show(Report report) {
    return new ReportOutput(spec.commandLine().getOut(), spec.commandLine().getErr(), json, html).show(report);
  }

  interface StubCall {
    int apply(DiagnosisGrpc.DiagnosisBlockingStub stub);
  }

  static int withStub(DaemonAddress address, ClientSecurity security, long timeoutSeconds, StubCall call) {
    if (timeoutSeconds < 1) {
      throw new IllegalArgumentException("--timeout must be at least 1 second, got " + timeoutSeconds);
    }
    ManagedChannel channel = address.open(security);
    try {
      return call.apply(DiagnosisGrpc.newBlockingStub(channel).withDeadlineAfter(timeoutSeconds, TimeUnit.SECONDS));
    } finally {
      channel.shutdownNow();
    }
  }

  /** {@code fr-diagnose jobs}. */
  @Command(name = "jobs", mixinStandardHelpOptions = true, description = "Lists the jobs the daemon tracks.")
  static final class Jobs implements Callable<Integer> {
    @CommandLine.ParentCommand
    FrDiagnose parent;

    @Override
    public Integer call() {
      return withStub(parent.daemon, parent.security, parent.timeoutSeconds, stub -> {
        PrintWriter out = parent.spec.commandLine().getOut();
        var jobs = stub.listJobs(ListJobsRequest.getDefaultInstance()).getJobsList();
        if (parent.json) {
          out.println(toJson(jobs));
        } else if (jobs.isEmpty()) {
          out.println("no jobs");
        } else {
          out.printf("%-24s %6s %9s %5s %8s  %s%n", "JOB", "WORLD", "CONNECTED", "LOST", "INCIDENT", "LATEST REPORT");
          for (JobSummary j : jobs) {
            out.printf("%-24s %6d %9d %5d %8s  %s%n", UntrustedText.line(j.getJobId()), j.getWorldSize(),
                j.getRanksConnected(),
                j.getRanksLost(), j.getIncidentOpen() ? "open" : "-",
                j.getLatestReportId().isEmpty() ? "-" : j.getLatestReportId());
          }
        }
        out.flush();
        return ExitCode.NO_HANG;
      });
    }

    private static String toJson(java.util.List<JobSummary> jobs) {
      StringBuilder sb = new StringBuilder("[");
      for (JobSummary j : jobs) {
        if (sb.length() > 1) {
          sb.append(',');
        }
        sb.append(String.format("{\"job\":\"%s\",\"world_size\":%d,\"ranks_connected\":%d,\"ranks_lost\":%d,"
            + "\"incident_open\":%s,\"latest_report_id\":\"%s\"}", j.getJobId(), j.getWorldSize(),
            j.getRanksConnected(), j.getRanksLost(), j.getIncidentOpen(), j.getLatestReportId()));
      }
      return sb.append(']').toString();
    }
  }

  /** {@code fr-diagnose reports <job>}. */
  @Command(name = "reports", mixinStandardHelpOptions = true, description = "Lists a job's reports, newest first.")
  static final class Reports implements Callable<Integer> {
    @CommandLine.ParentCommand
    FrDiagnose parent;

    @Parameters(index = "0", paramLabel = "JOB")
    String job;

    @Override
    public Integer call() {
      return withStub(parent.daemon, parent.security, parent.timeoutSeconds, stub -> {
        PrintWriter out = parent.spec.commandLine().getOut();
        var reports = stub.listReports(ListReportsRequest.newBuilder().setJobId(job).build()).getReportsList();
        if (reports.isEmpty()) {
          out.println("no reports for job " + UntrustedText.line(job));
        }
        for (ReportSummary r : reports) {
          out.printf("%-22s %s  %-21s %-14s culprits %-10s %s%n", UntrustedText.line(r.getReportId()),
              Instant.ofEpochMilli(r.getCreatedAtMs()), r.getVerdict(), r.getSymptom(),
              Ranks.compact(r.getCulpritRanksList()), UntrustedText.line(r.getHeadline()));
        }
        out.flush();
        return ExitCode.NO_HANG;
      });
    }
  }

  /** {@code fr-diagnose report <id>}. */
  @Command(name = "report", mixinStandardHelpOptions = true, description = "Shows one stored report.")
  static final class ShowReport implements Callable<Integer> {
    @CommandLine.ParentCommand
    FrDiagnose parent;

    @Parameters(index = "0", paramLabel = "REPORT_ID")
    String reportId;

    @Override
    public Integer call() {
      return withStub(parent.daemon, parent.security, parent.timeoutSeconds,
          stub -> parent.print(stub.getReport(GetReportRequest.newBuilder().setReportId(reportId).build())));
    }
  }
}
