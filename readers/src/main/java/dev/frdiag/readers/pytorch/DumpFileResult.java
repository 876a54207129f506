package dev.frdiag.readers.pytorch;

import java.nio.file.Path;
import java.util.Objects;

/**
 * What reading one file of a dump folder gave: the dump, or why it could not be read. One corrupt file never
 * stops the others from being read.
 *
 * @param file the file
 * @param rank the rank its name gives
 * @param dump the dump; null exactly when {@code error} is not
 * @param error why the file could not be read; null exactly when {@code dump} is not
 */
public record DumpFileResult(Path file, int rank, FlightRecorderDump dump, DumpFormatException error) {
  public DumpFileResult {
    Objects.requireNonNull(file, "file");
    if ((dump == null) == (error == null)) {
      throw new IllegalArgumentException("exactly one of dump and error must be set");
    }
  }

  /** A file that was read. */
  public static DumpFileResult of(FlightRecorderDump dump) {
    return parsed(dump);
  }

  /** A file that could not be read, and why. */
  public static DumpFileResult of(Path file, int rank, DumpFormatException error) {
    return failed(file, rank, Objects.requireNonNull(error, "error"));
  }

  static DumpFileResult parsed(FlightRecorderDump dump) {
    return new DumpFileResult(dump.file(), dump.rank(), dump, null);
  }

  static DumpFileResult failed(Path file, int rank, DumpFormatException error) {
    return new DumpFileResult(file, rank, null, error);
  }

  /** Whether the file was read. */
  public boolean isOk() {
    return dump != null;
  }
}
