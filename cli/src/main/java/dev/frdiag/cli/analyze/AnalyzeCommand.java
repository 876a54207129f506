package dev.frdiag.cli.analyze;

import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.HangAnalyzer;
import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.cli.ExitCode;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.context.ContextFindings;
import dev.frdiag.readers.context.NodeLogs;
import dev.frdiag.readers.nccl.NcclLog;
import dev.frdiag.readers.nccl.NcclLogParser;
import dev.frdiag.readers.nccl.NotAnNcclLogException;
import dev.frdiag.readers.pytorch.DumpFileResult;
import dev.frdiag.readers.pytorch.DumpFolder;
import dev.frdiag.readers.pytorch.DumpFormatException;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import dev.frdiag.readers.pytorch.WatchdogLine;
import dev.frdiag.readers.pytorch.WatchdogLogReader;
import dev.frdiag.report.Report;
import dev.frdiag.report.ReportText;
import dev.frdiag.report.Timeline;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code fr-diagnose analyze <path>...}: the daemon's diagnosis, offline, from whatever a user has after a hang —
 * folders of Flight Recorder dumps, single dump files, NCCL_DEBUG logs, training logs with watchdog lines, kernel
 * logs with Xid lines, launcher output and NCCL RAS reports.
 */
@Command(name = "analyze", mixinStandardHelpOptions = true,
    description = {"Diagnoses a hang offline from Flight Recorder dumps (pickle or JSON), NCCL_DEBUG logs, "
        + "training and launcher logs, kernel logs (Xid) and NCCL RAS reports. Each file's kind is detected from its "
        + "content.",
        "A file that cannot be read is reported on stderr and the rest are still analysed."})
public final class AnalyzeCommand implements Callable<Integer> {
  @Parameters(arity = "1..*", paramLabel = "PATH",
      description = "Dump folders, dump files, NCCL logs, training logs, kernel logs.")
  List<Path> paths;

  @Option(names = "--prefix", description = "Dump file name prefix before the rank (when a folder holds several).")
  String prefix;

  @Option(names = "--world-size", description = "Ranks in the job, when not every rank left a file.")
  int worldSize;

  @Option(names = "--job", defaultValue = "offline", description = "Job name for the report (default ${DEFAULT-VALUE}).")
  String job;

  /** The parent command carries --json (it applies to every subcommand). */
  @CommandLine.ParentCommand
  dev.frdiag.cli.FrDiagnose parent;

  @Option(names = {"-q", "--quiet"}, description = "No progress bar.")
  boolean quiet;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  /** A bar only helps a person watching a terminal; in pipes and CI logs it is noise. */
  private boolean showProgress() {
    return !quiet && System.console() != null;
  }

  /**
   * Threads that read dump files: decoding is CPU-bound, and two keep both cores of a small machine busy while
   * bounding the memory of dumps being read at once.
   */
  static final int READ_THREADS = 2;

  @Override
  public Integer call() throws IOException, InterruptedException {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    DumpReader reader = DumpReader.create();
    OfflineEvidence evidence = new OfflineEvidence().worldSize(worldSize);
    List<String> notes = new ArrayList<>();
    long started = System.nanoTime();
    int dumpFiles = 0;
    int logFiles = 0;
    for (Path path : paths) {
      if (!Files.exists(path)) {
        err.println("fr-diagnose: " + path + ": no such file or directory");
        return ExitCode.USAGE;
      }
      List<Path> files = new ArrayList<>();
      if (Files.isDirectory(path)) {
        DumpFolder.Listing folder;
        try {
          folder = reader.listFolder(path, Optional.ofNullable(prefix));
        } catch (DumpFormatException e) {
          err.println("fr-diagnose: " + e.getMessage());
          return ExitCode.USAGE;
        }
        List<DumpFileResult> failed;
        try (ProgressBar bar = new ProgressBar(err, "dumps", folder.files().size(), showProgress())) {
          failed = readDumps(reader, folder.files(), evidence, bar);
        }
        dumpFiles += folder.files().size();
        for (DumpFileResult r : failed) {
          err.println("fr-diagnose: " + r.error().getMessage());
          evidence.unreadable(r.rank(), r.error().problem());
        }
        notes.addAll(folder.notes());
        // Logs beside the dumps are evidence too; other files were already noted by the folder reader.
        Set<Path> dumps = new HashSet<>();
        folder.files().forEach(f -> dumps.add(f.path()));
        try (Stream<Path> others = Files.list(path)) {
          for (Path f : others.filter(f -> !dumps.contains(f) && Files.isRegularFile(f)).sorted().toList()) {
            if (InputKind.of(f).isLog()) {
              files.add(f);
            }
          }
        }
      } else if (!Files.isRegularFile(path)) {
        // PyTorch's debug pipes live beside its dumps: opening a FIFO nobody writes would wait forever.
        err.println("fr-diagnose: skipping " + path + ": not a regular file (a pipe, socket or device)");
        continue;
      } else {
        files.add(path);
      }
      try (ProgressBar bar = new ProgressBar(err, "files", files.size(), showProgress())) {
        for (Path file : files) {
          switch (InputKind.of(file)) {
            case PICKLE_DUMP, JSON_DUMP -> {
              dumpFiles++;
              try {
                FlightRecorderDump d = reader.read(file);
                evidence.add(d);
              } catch (DumpFormatException e) {
                err.println("fr-diagnose: " + e.getMessage());
                DumpReader.rankFromFileName(file.getFileName().toString())
                    .ifPresent(rank -> evidence.unreadable(rank, e.problem()));
              }
            }
            case NCCL_LOG, TRAINING_LOG, KERNEL_LOG -> {
              logFiles++;
              List<WatchdogLine> lines = WatchdogLogReader.read(file);
              evidence.add(lines);
              boolean nccl = false;
              try {
                NcclLog log = NcclLogParser.create().parse(file);
                nccl = log.ncclLineCount() > 0 || !log.topologies().isEmpty() || !log.events().isEmpty();
                if (nccl) {
                  // A training log that holds no NCCL line says nothing of NCCL: no "the NCCL logs show no failure".
                  ContextFindings.nodes(job, log).forEach(evidence::add);
                }
              } catch (NotAnNcclLogException e) {
                // A training or kernel log without NCCL lines: its other lines are all it offers.
              }
              // Xid lines, launchers' and the kernel's reports of dead processes, NCCL RAS reports.
              List<NodeContext> nodes = NodeLogs.read(job, file);
              nodes.forEach(evidence::add);
              if (lines.isEmpty() && !nccl && nodes.isEmpty()) {
                notes.add(file + ": no PyTorch watchdog line and no NCCL line");
              }
            }
            case UNKNOWN -> notes.add(file + ": not a Flight Recorder dump, NCCL log or training log; skipped");
          }
          bar.step();
        }
      }
    }
    for (String note : notes) {
      err.println("fr-diagnose: note: " + note);
      evidence.unread(note);
    }
    if (evidence.isEmpty()) {
      err.println("fr-diagnose: nothing to analyse: no readable Flight Recorder dump and no watchdog line in "
          + paths);
      return ExitCode.INSUFFICIENT_EVIDENCE;
    }
    JobEvidence input = evidence.build(job);
    long read = System.nanoTime();
    Diagnosis d = HangAnalyzer.analyze(input);
    long analysed = System.nanoTime();
    Instant now = Instant.now();
    Timeline timeline = new Timeline().firstDivergence(d).add(now, String.format("read %d dump files and %d logs "
        + "in %d ms; analysed %d ranks in %d ms", dumpFiles, logFiles, (read - started) / 1_000_000,
        input.ranks().size(), (analysed - read) / 1_000_000));
    Report report = Report.of("", job, Report.Trigger.OFFLINE, now, d, timeline.entries());
    if (parent != null) {
      return parent.show(report);
    }
    out.print(ReportText.plain(report));
    out.flush();
    return ExitCode.of(report.verdict());
  }

  /**
   * Reads {@code files} on {@link #READ_THREADS} threads and hands each dump to {@code evidence} as soon as it is
   * read, on this thread, so a large folder is never held whole: at most a few full dumps are in memory at once.
   *
   * @return the files that could not be read, in the listing's order
   */
  private static List<DumpFileResult> readDumps(DumpReader reader, List<DumpFolder.DumpFile> files,
      OfflineEvidence evidence, ProgressBar bar) throws InterruptedException {
    Map<Path, DumpFileResult> failed = new HashMap<>();
    ExecutorService pool = Executors.newFixedThreadPool(READ_THREADS, r -> {
      Thread t = new Thread(r, "fr-diagnose-read");
      t.setDaemon(true);
      return t;
    });
    try {
      CompletionService<DumpFileResult> done = new ExecutorCompletionService<>(pool);
      int submitted = 0;
      for (int taken = 0; taken < files.size(); taken++) {
        // A bounded window: readers never run further ahead of this thread than a few files.
        while (submitted < files.size() && submitted - taken < 2 * READ_THREADS) {
          DumpFolder.DumpFile f = files.get(submitted++);
          done.submit(() -> read(reader, f));
        }
        DumpFileResult r = result(done.take());
        if (r.isOk()) {
          evidence.add(r.dump());
        } else {
          failed.put(r.file(), r);
        }
        bar.step();
      }
    } finally {
      pool.shutdownNow();
    }
    List<DumpFileResult> inOrder = new ArrayList<>(failed.size());
    for (DumpFolder.DumpFile f : files) {
      if (failed.containsKey(f.path())) {
        inOrder.add(failed.get(f.path()));
      }
    }
    return inOrder;
  }

  private static DumpFileResult read(DumpReader reader, DumpFolder.DumpFile f) {
    try {
      return DumpFileResult.of(reader.read(f.path(), f.rank()));
    } catch (DumpFormatException e) {
      return DumpFileResult.of(f.path(), f.rank(), e);
    }
  }

  private static DumpFileResult result(Future<DumpFileResult> f) throws InterruptedException {
    try {
      return f.get();
    } catch (ExecutionException e) {
      // The reader turns every problem with a file into a DumpFormatException; what is left is not about a file.
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException re) {
        throw re;
      }
      if (cause instanceof Error error) {
        throw error;
      }
      throw new IllegalStateException(cause);
    }
  }
}
