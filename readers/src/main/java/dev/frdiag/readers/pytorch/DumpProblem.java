package dev.frdiag.readers.pytorch;

/**
 * Thrown inside the decoders when a dump is malformed; {@link DumpReader} turns it into a
 * {@link DumpFormatException} naming the file. Unchecked so the decoders stay readable.
 */
final class DumpProblem extends RuntimeException {
  private static final long serialVersionUID = 1L;

  DumpProblem(String message) {
    super(message, null, false, false);
  }
}
