package dev.frdiag.evidence;

import dev.frdiag.analysis.JobEvidence;
import dev.frdiag.analysis.RankTimeline;
import dev.frdiag.analysis.TimelineEvidence;
import dev.frdiag.evidence.FolderFiles.Input;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.context.ContextFindings;
import dev.frdiag.readers.context.NodeLogs;
import dev.frdiag.readers.kineto.KinetoTrace;
import dev.frdiag.readers.kineto.KinetoTraceReader;
import dev.frdiag.readers.kineto.RankTrace;
import dev.frdiag.readers.kineto.TraceFormatException;
import dev.frdiag.readers.nccl.NcclLog;
import dev.frdiag.readers.nccl.NcclLogParser;
import dev.frdiag.readers.nccl.NotAnNcclLogException;
import dev.frdiag.readers.pytorch.DumpFileResult;
import dev.frdiag.readers.pytorch.DumpFolder;
import dev.frdiag.readers.pytorch.DumpFormatException;
import dev.frdiag.readers.pytorch.DistributedLines;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.NotAStackDumpException;
import dev.frdiag.readers.pytorch.StackDumpReader;
import dev.frdiag.readers.pytorch.WatchdogLine;
import dev.frdiag.readers.pytorch.WatchdogLogReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.Stream;

/**
 * Reads what a job left behind (folders of Flight Recorder dumps, single dump files, NCCL_DEBUG logs, training
 * logs with watchdog lines, kernel logs with Xid lines, launcher output, NCCL RAS reports, the ranks' Python stack
 * dumps, PyTorch profiler traces) into the one
 * {@link JobEvidence} the analysis takes. Each file's kind is told once, by its content, whatever it is called (a
 * folder's dumps are its files that hold one; their names give only their ranks); a file that cannot be read is
 * reported and the others are still read. Immutable; each {@link #read} is independent.
 */
public final class EvidenceReader {
  /** The job name evidence is read under when none is given. */
  public static final String DEFAULT_JOB = "offline";

  private final String job;
  private final int worldSize;
  private final Optional<String> dumpPrefix;
  private final InputKind.Classifier classifier;

  private EvidenceReader(Builder b) {
    this.job = b.job;
    this.worldSize = b.worldSize;
    this.dumpPrefix = b.dumpPrefix;
    this.classifier = b.classifier;
  }

  /** A reader with the defaults: job {@value #DEFAULT_JOB}, world size inferred, dump prefix inferred. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * What reading gave.
   *
   * @param evidence the job's evidence; empty when nothing readable was found (files that could not be read say
   *     nothing about where the job is: with only those, every rank would look idle and the job healthy)
   * @param dumpFiles the Flight Recorder dump files read or tried
   * @param logFiles the log files read
   * @param timelines when profiler traces were read: every rank's collectives as they show them, for the
   *     straggler analysis
   * @param traceFiles the profiler trace files read or tried
   */
  public record Gathered(Optional<JobEvidence> evidence, int dumpFiles, int logFiles,
      Optional<TimelineEvidence> timelines, int traceFiles) {
    public Gathered {
      Objects.requireNonNull(evidence, "evidence");
      Objects.requireNonNull(timelines, "timelines");
    }

    /** What reading gave without profiler traces. */
    public Gathered(Optional<JobEvidence> evidence, int dumpFiles, int logFiles) {
      this(evidence, dumpFiles, logFiles, Optional.empty(), 0);
    }
  }

  /**
   * Reads {@code paths} (folders of dumps and the logs beside them, single files, and globs such as
   * {@code 'logs/node*'/train-*.log} that name either) in order. A pipe, socket or device among them is skipped:
   * PyTorch's debug pipes live beside its dumps, and opening a FIFO nobody writes would wait forever.
   *
   * @param progress told of each batch of files as it is read, of each file that could not be used, and last of
   *     each input that gave nothing
   * @throws UnusableInputException when a path does not exist (a glob: matches nothing), or is a folder that cannot
   *     be listed, holds nothing this reader knows, or holds dumps named with several prefixes when none was given;
   *     what was read before it is dropped
   * @throws IOException when a log cannot be read
   */
  public Gathered read(List<Path> paths, ReadProgress progress)
      throws UnusableInputException, IOException, InterruptedException {
    return new Reading(Objects.requireNonNull(progress, "progress")).all(paths);
  }

  /**
   * One {@link #read}: what has been gathered so far. Every input's kind is decided once, by its content, before it
   * is read as that kind.
   */
  private final class Reading {
    private final ReadProgress progress;
    private final DumpReader reader = DumpReader.create();
    private final StackDumpReader stacks = StackDumpReader.create();
    private final ReadWindow window = new ReadWindow();
    private final OfflineEvidence evidence = new OfflineEvidence().worldSize(worldSize);
    private final List<String> notes = new ArrayList<>();
    private final List<Path> traces = new ArrayList<>();
    private int dumpFiles;
    private int logFiles;

    Reading(ReadProgress progress) {
      this.progress = progress;
    }

    Gathered all(List<Path> inputs) throws UnusableInputException, IOException, InterruptedException {
      List<Path> paths = new ArrayList<>();
      for (Path input : inputs) {
        paths.addAll(Files.exists(input) ? List.of(input) : Globs.expand(input));
      }
      for (Path path : paths) {
        List<Input> files;
        if (Files.isDirectory(path)) {
          files = folder(path);
        } else if (!Files.isRegularFile(path)) {
          progress.problem("skipping " + path + ": not a regular file (a pipe, socket or device)");
          continue;
        } else {
          files = List.of(new Input(path, classifier.of(path)));
        }
        try (ReadProgress.Batch batch = progress.batch("files", files.size())) {
          for (Input file : files) {
            file(file);
            batch.step();
          }
        }
      }
      TraceTimelines timelines = new TraceTimelines();
      if (!traces.isEmpty()) {
        try (ReadProgress.Batch batch = progress.batch("traces", traces.size())) {
          window.each(traces, EvidenceReader::readTrace, r -> {
            if (r.problem() != null) {
              progress.problem(r.problem());
            } else {
              timelines.add(r.trace(), r.timelines(), r.device());
            }
            batch.step();
          });
        }
        timelines.problems().forEach(progress::problem);
      }
      for (String note : notes) {
        progress.note(note);
        evidence.unread(note);
      }
      return new Gathered(evidence.isEmpty() ? Optional.empty() : Optional.of(evidence.build(job)), dumpFiles,
          logFiles, timelines.build(job), traces.size());
    }

    /**
     * Reads the dumps of folder {@code dir}; returns its other files (profiler traces, stack dumps, logs), which are
     * evidence too, to be read one by one.
     */
    private List<Input> folder(Path dir) throws UnusableInputException, InterruptedException {
      FolderFiles files;
      try {
        files = FolderFiles.of(dir, classifier);
      } catch (IOException | UncheckedIOException e) {
        throw new UnusableInputException("cannot list the directory: " + e.getMessage() + " (" + dir + ")", e);
      }
      DumpFolder.Listing listing;
      try {
        listing = reader.listDumps(dir, files.dumps(), files.unknown(), dumpPrefix);
      } catch (DumpFormatException e) {
        throw new UnusableInputException(e.getMessage(), e);
      }
      boolean ofDumps = !files.dumps().isEmpty() || !listing.files().isEmpty();
      if (!ofDumps && files.others().isEmpty()) {
        boolean folders = files.unknown().stream().anyMatch(Files::isDirectory);
        throw new UnusableInputException("no Flight Recorder dumps: no file holds a dump, a profiler trace, a stack "
            + "dump or a log this reader knows" + (folders ? "; the folders in it are not looked into" : "") + " ("
            + dir + ")");
      }
      if (!listing.files().isEmpty()) {
        dumps(listing.files());
      }
      if (ofDumps) {
        // What the listing left out, said as it is about dumps: files not named as they are, dumps with no rank.
        notes.addAll(listing.notes());
      } else {
        files.unknown().stream().filter(Files::isRegularFile).forEach(f -> notes.add(unknown(f)));
      }
      return files.others();
    }

    /**
     * Reads {@code files} through the read window and hands each dump to the evidence as soon as it is read, on this
     * thread, so a large folder is never held whole: at most a few full dumps are in memory at once. The files that
     * could not be read are reported once all are read, in the listing's order.
     */
    private void dumps(List<DumpFolder.DumpFile> files) throws InterruptedException {
      List<DumpFileResult> failed = new ArrayList<>();
      try (ReadProgress.Batch batch = progress.batch("dumps", files.size())) {
        window.each(files, this::read, r -> {
          if (r.isOk()) {
            evidence.add(r.dump());
          } else {
            failed.add(r);
          }
          batch.step();
        });
      }
      dumpFiles += files.size();
      for (DumpFileResult r : failed) {
        progress.problem(r.error().getMessage());
        evidence.unreadable(r.rank(), r.error().problem());
      }
    }

    private DumpFileResult read(DumpFolder.DumpFile f) {
      try {
        return DumpFileResult.of(reader.read(f.path(), f.rank()));
      } catch (DumpFormatException e) {
        return DumpFileResult.of(f.path(), f.rank(), e);
      }
    }

    private void file(Input input) throws IOException {
      Path file = input.file();
      switch (input.kind()) {
        case PICKLE_DUMP, JSON_DUMP -> {
          dumpFiles++;
          try {
            evidence.add(reader.read(file));
          } catch (DumpFormatException e) {
            progress.problem(e.getMessage());
            DumpReader.rankFromFileName(file.getFileName().toString())
                .ifPresent(rank -> evidence.unreadable(rank, e.problem()));
          }
        }
        case NCCL_LOG, TRAINING_LOG, KERNEL_LOG -> {
          logFiles++;
          log(file);
        }
        case STACK_DUMP -> stackDump(file);
        // Read together once every path is listed, several at a time.
        case PROFILER_TRACE -> traces.add(file);
        case UNKNOWN -> notes.add(unknown(file));
      }
    }

    /** A rank's stack dump: the rank is its file name's last number, as no stack dump names its rank. */
    private void stackDump(Path file) throws IOException {
      String name = String.valueOf(file.getFileName());
      OptionalInt rank = StackDumpReader.rankFromFileName(name);
      if (rank.isEmpty()) {
        progress.problem("skipping " + file + " as a stack dump: its name does not tell whose it is (name it "
            + "<anything>_<rank>, e.g. dump_traceback_rank_2.txt); reading it as a log");
        logFiles++;
        log(file);
        return;
      }
      try {
        if (!evidence.add(rank.getAsInt(), stacks.read(file))) {
          notes.add(file + ": rank " + rank.getAsInt() + " already has a stack dump; skipped");
        }
      } catch (NotAStackDumpException e) {
        progress.problem(e.getMessage());
      }
    }

    private void log(Path file) throws IOException {
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
        Optional<String> known = DistributedLines.first(file);
        if (known.isPresent()) {
          // Lines it knows that say nothing of a collective: a report that says so, not "nothing to analyse".
          evidence.add(NodeContext.newBuilder().setJobId(job).addFindings(ContextFinding.newBuilder()
              .setKind(ContextFinding.Kind.NOTE).setRank(-1).setDevice(-1).setDetail(known.get())
              .setSource(String.valueOf(file.getFileName()))).build());
        } else {
          notes.add(file + ": no line this reader knows (" + LOOKED_FOR + "; " + found(file) + ")");
        }
      }
    }
  }

  /** The note for a file that holds nothing this reader knows. */
  private static String unknown(Path file) {
    return file + ": not a Flight Recorder dump, stack dump or log this reader knows; skipped (" + LOOKED_FOR + "; "
        + found(file) + ")";
  }

  /** What a log is searched for, as a person reading a "nothing found" note needs to hear it. */
  static final String LOOKED_FOR = "looked for PyTorch watchdog, collective-checker and c10d error lines, NCCL and "
      + "RAS lines, nccl-tests output, launcher, kernel and Horovod lines, training steps";

  /** What {@code file} holds instead: its size in lines and its first non-blank line, cut short. */
  static String found(Path file) {
    try (Stream<String> lines = Files.lines(file, java.nio.charset.StandardCharsets.ISO_8859_1)) {
      long[] count = {0};
      String first = lines.peek(l -> count[0]++).filter(l -> !l.isBlank()).findFirst().orElse("");
      if (first.isEmpty()) {
        return "found no text";
      }
      String shown = first.strip().length() > 80 ? first.strip().substring(0, 80) + "…" : first.strip();
      return "found text starting \"" + shown.replaceAll("\\p{Cntrl}", "?") + "\"";
    } catch (IOException | java.io.UncheckedIOException e) {
      return "could not read it: " + e.getMessage();
    }
  }

  /** What reading one trace file gave: its ranks' timelines, or why it could not be read. */
  private record TraceRead(KinetoTrace trace, List<RankTimeline> timelines, boolean device, String problem) {}

  private static TraceRead readTrace(Path file) {
    try {
      KinetoTrace t = KinetoTraceReader.create().read(file);
      // Reduced to timelines on the reading thread: the kernel intervals go as soon as the overlap is known.
      boolean device = t.ranks().stream().anyMatch(RankTrace::hasDevice);
      return new TraceRead(t, TraceTimelines.of(t), device, null);
    } catch (IOException e) {
      return new TraceRead(null, List.of(), false, e instanceof TraceFormatException ? e.getMessage()
          : "cannot read " + file + ": " + e.getMessage());
    }
  }

  /** Configures an {@link EvidenceReader}. */
  public static final class Builder {
    private String job = DEFAULT_JOB;
    private int worldSize;
    private Optional<String> dumpPrefix = Optional.empty();
    private InputKind.Classifier classifier = InputKind::of;

    private Builder() {}

    /** The job name the evidence and the node context it holds are read under. */
    public Builder job(String job) {
      this.job = Objects.requireNonNull(job, "job");
      return this;
    }

    /**
     * Ranks in the job, for when not every rank left a file; 0 (the default) infers it from the group memberships
     * and ranks seen, and so does any value smaller than what was seen.
     */
    public Builder worldSize(int worldSize) {
      this.worldSize = worldSize;
      return this;
    }

    /** The dump file name prefix before the rank, for folders holding several; null infers it. */
    public Builder dumpPrefix(String prefix) {
      this.dumpPrefix = Optional.ofNullable(prefix);
      return this;
    }

    /** How each input's kind is told; {@link InputKind#of} unless a test watches it. */
    Builder classifier(InputKind.Classifier classifier) {
      this.classifier = Objects.requireNonNull(classifier, "classifier");
      return this;
    }

    public EvidenceReader build() {
      return new EvidenceReader(this);
    }
  }
}
