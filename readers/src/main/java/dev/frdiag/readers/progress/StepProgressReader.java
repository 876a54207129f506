package dev.frdiag.readers.progress;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads training step counters one line at a time and says whether they advanced: {@code step: 800} and
 * {@code step 800} (torchtitan, many scripts), {@code global_step=3.2e+4} is not read (a float is no counter),
 * {@code iteration      120/    1000} (Megatron), and progress bars' {@code 24/1752 [01:08<1:22:56, 2.88s/it]}
 * (tqdm, as Hugging Face's Trainer and Lightning print them). Not thread-safe; one instance per file.
 */
public final class StepProgressReader {
  /** Fewer distinct steps than this is not a run going on: one step printed twice, or by every rank. */
  static final int MIN_STEPS = 2;

  private static final Pattern STEP = Pattern.compile("\\b(?:[Ss]tep|iteration)[:=]?\\s+(\\d{1,12})\\b(?!\\.\\d)");
  private static final Pattern BAR = Pattern.compile("\\b(\\d{1,12})/(\\d{1,12}) \\[\\d");

  private long first = -1;
  private long last = -1;
  private int distinct;
  private int lines;
  private String lastSource = "";

  /** Takes the next line; {@code source} names it ("file:line"). */
  public void accept(String line, String source) {
    if (line.indexOf('/') < 0 && line.indexOf("tep") < 0 && line.indexOf("iteration") < 0) {
      return;
    }
    long step = -1;
    Matcher m = BAR.matcher(line);
    while (m.find()) {
      // A glued line holds several redraws of the bar: the last is the latest.
      long done = Long.parseLong(m.group(1));
      if (done <= Long.parseLong(m.group(2))) {
        step = done;
      }
    }
    if (step < 0 && (line.contains("tep") || line.contains("iteration")) && (m = STEP.matcher(line)).find()) {
      step = Long.parseLong(m.group(1));
    }
    if (step < 0) {
      return;
    }
    lines++;
    if (first < 0) {
      first = step;
    }
    if (step > last) {
      distinct++;
      last = step;
      lastSource = source;
    }
  }

  /** The steps read, when they advanced over at least {@link #MIN_STEPS} distinct values. */
  public Optional<StepProgress> finish() {
    return distinct >= MIN_STEPS && last > first ? Optional.of(new StepProgress(first, last, lines, lastSource))
        : Optional.empty();
  }
}
