package dev.frdiag.readers.kineto;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * One profiler trace file read: one rank's trace, or several when the file merges ranks.
 *
 * @param file where it was read from
 * @param ranks each rank it holds, by rank
 * @param notes what was read with reservations ("truncated at byte …", "events naming no rank skipped"), each a
 *     sentence without the file name
 */
public record KinetoTrace(Path file, List<RankTrace> ranks, List<String> notes) {
  public KinetoTrace {
    Objects.requireNonNull(file, "file");
    ranks = List.copyOf(ranks);
    notes = List.copyOf(notes);
  }
}
