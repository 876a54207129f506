package dev.frdiag.readers.pytorch;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * The dumps of one folder, one result per dump file.
 *
 * @param dir the folder
 * @param prefix the file name prefix the dumps share (given, or inferred when there was only one)
 * @param files one result per dump file, by rank (then by name when two files claim one rank)
 * @param notes files that were left out and why (logs, notices, files with another prefix), duplicate ranks
 */
public record DumpFolder(Path dir, String prefix, List<DumpFileResult> files, List<String> notes) {
  public DumpFolder {
    Objects.requireNonNull(dir, "dir");
    Objects.requireNonNull(prefix, "prefix");
    files = List.copyOf(files);
    notes = List.copyOf(notes);
  }

  /** The dumps that were read, by rank. */
  List<FlightRecorderDump> dumps() {
    return files.stream().filter(DumpFileResult::isOk).map(DumpFileResult::dump).toList();
  }

  /** The files that could not be read, by rank. */
  List<DumpFileResult> failures() {
    return files.stream().filter(f -> !f.isOk()).toList();
  }

  /** A dump file of a folder and the rank its name gives. */
  public record DumpFile(Path path, int rank) {
    public DumpFile {
      Objects.requireNonNull(path, "path");
    }
  }

  /**
   * The dump files of a folder, not yet read.
   *
   * @param dir the folder
   * @param prefix the file name prefix the dumps share; empty when there are none
   * @param files the dump files, by rank (then by name when two files claim one rank)
   * @param notes files that were left out and why, duplicate ranks
   */
  public record Listing(Path dir, String prefix, List<DumpFile> files, List<String> notes) {
    public Listing {
      Objects.requireNonNull(dir, "dir");
      Objects.requireNonNull(prefix, "prefix");
      files = List.copyOf(files);
      notes = List.copyOf(notes);
    }
  }
}
