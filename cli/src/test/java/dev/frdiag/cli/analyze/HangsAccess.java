package dev.frdiag.cli.analyze;

import dev.frdiag.testing.dumps.DumpWriter.Encoding;
import dev.frdiag.testing.dumps.FaultyDumps.Kind;
import java.nio.file.Path;

/** A generated hang's dumps for tests outside this package. */
public final class HangsAccess {
  private HangsAccess() {}

  /** 64 ranks' pickled dumps of a GPU stall on rank 9, in {@code dir}. */
  public static void write(Path dir) {
    Hangs.write(Hangs.job(64, 60, Kind.GPU_STALL, 9).timing(true), dir, Encoding.PICKLE);
  }
}
