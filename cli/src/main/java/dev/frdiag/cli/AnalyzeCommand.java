package dev.frdiag.cli;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.StragglerAnalyzer;
import dev.frdiag.analysis.TimelineEvidence;
import dev.frdiag.analysis.TraceHistory;
import dev.frdiag.evidence.EvidenceReader;
import dev.frdiag.evidence.ReadProgress;
import dev.frdiag.evidence.UnusableInputException;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportDraft;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code fr-diagnose analyze <path>...}: the daemon's diagnosis, offline, from whatever a user has after a hang —
 * folders of Flight Recorder dumps, single dump files, NCCL_DEBUG logs, training logs with watchdog lines, kernel
 * logs with Xid lines, launcher output, NCCL RAS reports and the ranks' Python stack dumps; and from profiler
 * traces, which rank makes the others wait.
 */
@Command(name = "analyze", mixinStandardHelpOptions = true,
    description = {"Diagnoses a hang offline from Flight Recorder dumps (pickle or JSON), NCCL_DEBUG logs, "
        + "training and launcher logs, kernel logs (Xid), NCCL RAS reports and the ranks' Python stack dumps "
        + "(dump_traceback or py-spy dump; the rank is the file name's last number). Each file's kind is detected "
        + "from its content.",
        "PyTorch profiler traces (.json, .json.gz; the rank from distributedInfo, else 'rank<N>' in the file name) "
        + "name the rank that makes the others wait at collectives: SLOW/STRAGGLER, exit code 7.",
        "A file that cannot be read is reported on stderr and the rest are still analysed."})
public final class AnalyzeCommand implements Callable<Integer> {
  @Parameters(arity = "1..*", paramLabel = "PATH",
      description = "Dump folders, dump files, NCCL logs, training logs, kernel logs, stack dumps, profiler traces; a quoted glob ('logs/node*/train-*.log') names the files it matches.")
  List<Path> paths;

  @Option(names = "--prefix", description = "Dump file name prefix before the rank (when a folder holds several).")
  String prefix;

  @Option(names = "--world-size", description = "Ranks in the job, when not every rank left a file.")
  int worldSize;

  @Option(names = "--job", defaultValue = "offline", description = "Job name for the report (default ${DEFAULT-VALUE}).")
  String job;

  @Option(names = {"-q", "--quiet"}, description = "No progress bar.")
  boolean quiet;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  /** A bar only helps a person watching a terminal; in pipes and CI logs it is noise. */
  private boolean showProgress() {
    return !quiet && System.console() != null;
  }

  @Override
  public Integer call() throws IOException, InterruptedException {
    PrintWriter err = spec.commandLine().getErr();
    long started = System.nanoTime();
    EvidenceReader.Gathered gathered;
    try {
      gathered = EvidenceReader.builder().job(job).worldSize(worldSize).dumpPrefix(prefix).build()
          .read(paths, new Progress(err));
    } catch (UnusableInputException e) {
      err.println("fr-diagnose: " + e.getMessage());
      return ExitCode.USAGE;
    }
    if (gathered.evidence().isEmpty() && gathered.timelines().isPresent()) {
      return stragglers(gathered, started);
    }
    if (gathered.evidence().isEmpty()) {
      err.println("fr-diagnose: nothing to analyse in " + paths + ": no readable Flight Recorder dump or profiler "
          + "trace, and no line that PyTorch, NCCL, nccl-tests, a launcher or the kernel prints (each file's note above "
          + "says what it holds)");
      return ExitCode.INSUFFICIENT_EVIDENCE;
    }
    JobEvidence input = gathered.evidence().get();
    long read = System.nanoTime();
    Diagnosis d = HangAnalyzer.analyze(input);
    if (gathered.timelines().isPresent()) {
      // Traces of the same job beside its dumps: the stuck collective's group as they show it before the hang.
      d = TraceHistory.attach(d, gathered.timelines().get());
    }
    long analysed = System.nanoTime();
    return show(d, String.format("read %d dump files and %d logs in %d ms; analysed %d ranks in %d ms",
        gathered.dumpFiles(), gathered.logFiles(), (read - started) / 1_000_000, input.ranks().size(),
        (analysed - read) / 1_000_000));
  }

  /** Profiler traces alone: who arrives late at collectives. */
  private int stragglers(EvidenceReader.Gathered gathered, long started) {
    TimelineEvidence timelines = gathered.timelines().orElseThrow();
    long read = System.nanoTime();
    Diagnosis d = StragglerAnalyzer.analyze(timelines);
    long analysed = System.nanoTime();
    return show(d, String.format("read %d profiler traces in %d ms; analysed %d ranks' collectives in %d ms",
        gathered.traceFiles(), (read - started) / 1_000_000, timelines.ranks().size(),
        (analysed - read) / 1_000_000));
  }

  /** Prints the report of {@code d}, whose timeline says {@code how} it was read and analysed. */
  private int show(Diagnosis d, String how) {
    return ReportOutput.of(spec).show(ReportDraft.of(job, Report.Trigger.OFFLINE).finish("", d, Instant.now(), how));
  }

  /** Reading as a person sees it on stderr: a bar per batch of files, a line per file that could not be used. */
  private final class Progress implements ReadProgress {
    private final PrintWriter err;

    Progress(PrintWriter err) {
      this.err = err;
    }

    @Override
    public Batch batch(String label, int total) {
      return new ProgressBar(err, label, total, showProgress());
    }

    @Override
    public void problem(String message) {
      err.println("fr-diagnose: " + message);
    }

    @Override
    public void note(String note) {
      err.println("fr-diagnose: note: " + note);
    }
  }
}
