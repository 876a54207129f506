package dev.frdiag.daemon.store;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the {@link ReportStore}'s summary index ({@code reports/summaries.jsonl}) in step with its summaries: each
 * report's line is appended, flushed, as the report lands, and the file is written anew from the live summaries
 * when a start found it missing, damaged or behind, after an append failed (it may have left part of a line), and
 * when the lines of removed reports outnumber the live ones. A write the disk refuses is logged; the next start
 * reads the report files the index misses. Thread-safe: its lock orders appends and rewrites, and is taken before
 * the store's, never inside it.
 */
final class IndexKeeper {
  // The store's logger, so these lines keep the name they were always logged under.
  private static final Logger log = LoggerFactory.getLogger(ReportStore.class);
  /** Index lines of removed reports tolerated before the index is written anew (and at least as many as live). */
  static final int STALE_LINES_BEFORE_COMPACTION = 10_000;

  private final Path index;
  private final ReportStore.FileWriter writer;
  /** The store's summaries as lines, copied under the store's lock. */
  private final Supplier<List<SummaryIndex.Line>> live;
  private final Object lock = new Object();
  /** Lines in the index file whose reports retention removed since it was last written whole. */
  @GuardedBy("lock")
  private long staleLines;
  /** Whether an append to the index failed, so that the next one writes it whole. */
  @GuardedBy("lock")
  private boolean broken;

  IndexKeeper(Path index, ReportStore.FileWriter writer, Supplier<List<SummaryIndex.Line>> live) {
    this.index = index;
    this.writer = writer;
    this.live = live;
  }

  /** Writes the index anew from the live summaries. */
  void compact() {
    synchronized (lock) {
      rewrite();
    }
  }

  /**
   * Runs {@code add}, which puts {@code line} among the live summaries, then appends the line (or writes the index
   * anew after a failed append), in one step with respect to rewrites, so that a line is neither lost nor written
   * twice.
   */
  void append(SummaryIndex.Line line, Runnable add) {
    synchronized (lock) {
      add.run();
      try {
        if (broken) {
          // A refused append may have left part of a line, which the next line would be glued to.
          rewrite();
        } else {
          SummaryIndex.append(index, line);
        }
      } catch (IOException | RuntimeException e) {
        broken = true;
        log.warn("cannot add report {} to the summary index {}: {}; the next start reads its file",
            line.report().reportId(), index, e.getMessage());
      }
    }
  }

  /**
   * Counts the lines of {@code count} reports retention removed, and writes the index anew once they outnumber both
   * {@link #STALE_LINES_BEFORE_COMPACTION} and the {@code liveReports} left.
   */
  void removed(int count, IntSupplier liveReports) {
    synchronized (lock) {
      staleLines += count;
      // Keeps the index file within twice what is stored, however long the daemon runs.
      if (staleLines > Math.max(STALE_LINES_BEFORE_COMPACTION, liveReports.getAsInt())) {
        rewrite();
      }
    }
  }

  @GuardedBy("lock")
  private void rewrite() {
    try {
      writer.write(index, SummaryIndex.text(live.get()));
      staleLines = 0;
      broken = false;
    } catch (IOException | RuntimeException e) {
      // The next append writes it whole again rather than add to a file that misses lines.
      broken = true;
      log.warn("cannot write the summary index {}: {}; the next start reads the report files it misses", index,
          e.getMessage());
    }
  }
}
