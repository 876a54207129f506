package dev.frdiag.readers.pytorch;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Lines of PyTorch's distributed layer and of the launchers that start its processes (torchrun and torch elastic,
 * the DeepSpeed launcher, fairseq's and other trainers' "distributed init" lines, Slurm's srun, mpirun) that say
 * nothing of a collective's state: that ProcessGroupNCCL started, which rank a process is, that a process was sent
 * a signal. Read so that a log made of them is known for what it is, not taken for a file of nothing.
 */
public final class DistributedLines {
  /** Lines longer than this are cut before matching. */
  static final int MAX_LINE = 8192;

  private DistributedLines() {}

  /** Whether {@code line} is one of these. */
  public static boolean isOne(String line) {
    return line.contains("ProcessGroupNCCL") || line.contains("ProcessGroupGloo") || line.contains("torch/distributed/")
        || line.contains("torch.distributed") || line.contains("distributed init (rank")
        || line.contains("[launch.py:") || line.contains("deepspeed.launcher") || line.contains("dist_world_size")
        || line.startsWith("srun: ") || line.contains("mpirun noticed") || line.contains("closing signal SIG")
        || line.contains("c10d") || line.contains("init_process_group")
        // PyTorch's own C++ log lines behind the launcher's rank tag: "[rank1]:[W508 18:24:24.5 reducer.cpp:1399]".
        || line.contains("[rank") && line.contains("]:[");
  }

  /**
   * The first such line of {@code file}, as {@code "name:line: text"} cut short, with how many there are; empty
   * when there is none.
   *
   * @throws IOException when the file cannot be read
   */
  public static Optional<String> first(Path file) throws IOException {
    var decoder = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
        .onUnmappableCharacter(CodingErrorAction.REPLACE);
    String name = String.valueOf(file.getFileName());
    try (BufferedReader in = new BufferedReader(new InputStreamReader(Files.newInputStream(file), decoder))) {
      String first = null;
      int count = 0;
      int number = 0;
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        number++;
        String text = line.length() > MAX_LINE ? line.substring(0, MAX_LINE) : line;
        if (isOne(text)) {
          count++;
          if (first == null) {
            String shown = text.strip().length() > 200 ? text.strip().substring(0, 200) + "…" : text.strip();
            first = name + ":" + number + ": \"" + shown + "\"";
          }
        }
      }
      return first == null ? Optional.empty()
          : Optional.of(count + " line" + (count == 1 ? "" : "s") + " of PyTorch's distributed layer or its launcher, "
              + "none about a collective's state (the first, " + first + ")");
    }
  }
}
