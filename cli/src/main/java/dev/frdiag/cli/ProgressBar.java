package dev.frdiag.cli;

import dev.frdiag.evidence.ReadProgress;
import java.io.PrintWriter;

/**
 * A one-line progress bar on stderr for long reads ("reading 37/512 files [=====>     ]"), redrawn in place and
 * cleared when done: how {@code analyze} shows a batch of files being read. Silent when disabled (-q) or when
 * there is too little work to be worth showing.
 */
final class ProgressBar implements ReadProgress.Batch {
  private static final int WIDTH = 30;
  /** Fewer items than this finish before a bar would be read. */
  static final int MIN_ITEMS = 8;

  private final PrintWriter err;
  private final String label;
  private final int total;
  private final boolean enabled;
  private int lastDrawn = -1;
  private int done;

  ProgressBar(PrintWriter err, String label, int total, boolean enabled) {
    this.err = err;
    this.label = label;
    this.total = total;
    this.enabled = enabled && total >= MIN_ITEMS;
  }

  @Override
  public void step() {
    done++;
    if (!enabled) {
      return;
    }
    int filled = total == 0 ? WIDTH : (int) ((long) done * WIDTH / total);
    if (filled == lastDrawn && done != total) {
      return;
    }
    lastDrawn = filled;
    err.print("\r" + label + " " + done + "/" + total + " [" + "=".repeat(Math.max(0, filled - 1))
        + (filled > 0 ? ">" : "") + " ".repeat(WIDTH - filled) + "]");
    err.flush();
  }

  @Override
  public void close() {
    if (enabled && lastDrawn >= 0) {
      err.print("\r" + " ".repeat(label.length() + 2 * String.valueOf(total).length() + WIDTH + 6) + "\r");
      err.flush();
    }
  }
}
