package dev.frdiag.evidence;

/**
 * What {@link EvidenceReader} tells its caller as it reads: each batch of files as it goes, and the inputs it could
 * not use. Called on the reading thread only.
 */
public interface ReadProgress {
  /** Tells nothing: for callers with no one watching. */
  ReadProgress SILENT = new ReadProgress() {
    @Override
    public Batch batch(String label, int total) {
      return () -> {};
    }

    @Override
    public void problem(String message) {}

    @Override
    public void note(String note) {}
  };

  /**
   * A batch of {@code total} files ("dumps" of one folder, or "files") begins; the batch is closed when it ends,
   * also when reading fails.
   */
  Batch batch(String label, int total);

  /** An input could not be read, or was skipped, for the reason {@code message} gives; the others are still read. */
  void problem(String message);

  /** An input that gave nothing ({@code note} says which and why); told once every path has been read. */
  void note(String note);

  /** One batch of files being read. */
  interface Batch extends AutoCloseable {
    /** One more file of the batch was read, or failed. */
    void step();

    @Override
    default void close() {}
  }
}
