package dev.frdiag.evidence;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * What a folder given to {@link EvidenceReader} holds: each of its files' kind, decided once, by its content. What a
 * folder is read as follows from its files' kinds alone.
 *
 * @param dir the folder
 * @param dumps its Flight Recorder dumps, whatever they are called, in name order
 * @param unknown its entries that hold nothing this reader knows, folders and pipes among them, in name order
 * @param others its profiler traces, stack dumps and logs, in name order
 */
record FolderFiles(Path dir, List<Path> dumps, List<Path> unknown, List<Input> others) {
  FolderFiles {
    dumps = List.copyOf(dumps);
    unknown = List.copyOf(unknown);
    others = List.copyOf(others);
  }

  /** One file to read and what it holds. */
  record Input(Path file, InputKind kind) {}

  /**
   * Lists {@code dir} and tells each regular file's kind with {@code classifier}; a file that cannot be read is of no
   * kind it knows, and whoever reads or notes it says why.
   *
   * @throws IOException when {@code dir} cannot be listed
   */
  static FolderFiles of(Path dir, InputKind.Classifier classifier) throws IOException {
    List<Path> entries;
    try (Stream<Path> s = Files.list(dir)) {
      entries = s.sorted().toList();
    }
    List<Path> dumps = new ArrayList<>();
    List<Path> unknown = new ArrayList<>();
    List<Input> others = new ArrayList<>();
    for (Path f : entries) {
      // Directories, and the <prefix><rank>.pipe FIFOs PyTorch creates beside its dumps: opening one would block.
      InputKind kind = Files.isRegularFile(f) ? kindOf(f, classifier) : InputKind.UNKNOWN;
      if (kind.isDump()) {
        dumps.add(f);
      } else if (kind == InputKind.UNKNOWN) {
        unknown.add(f);
      } else {
        others.add(new Input(f, kind));
      }
    }
    return new FolderFiles(dir, dumps, unknown, others);
  }

  private static InputKind kindOf(Path file, InputKind.Classifier classifier) {
    try {
      return classifier.of(file);
    } catch (IOException e) {
      return InputKind.UNKNOWN;
    }
  }
}
