package dev.frdiag.readers.progress;

import java.util.Objects;

/**
 * Training steps a log shows advancing.
 *
 * @param first the first step read
 * @param last the highest step read
 * @param lines lines that printed a step
 * @param lastSource where the highest step was printed, e.g. "train.log:812"
 */
public record StepProgress(long first, long last, int lines, String lastSource) {
  public StepProgress {
    Objects.requireNonNull(lastSource, "lastSource");
  }
}
