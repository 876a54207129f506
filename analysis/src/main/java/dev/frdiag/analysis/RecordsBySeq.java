package dev.frdiag.analysis;

import dev.frdiag.proto.v1.CollectiveRecord;
import java.util.AbstractList;
import java.util.Arrays;
import java.util.List;
import java.util.RandomAccess;

/**
 * One rank's records of one process group and kind (collectives, or P2P ops) by seq, several to a seq for a
 * coalesced group: sorted arrays searched by halves. An analysis at 16,384 ranks holds a million records, and a
 * sorted map of lists cost a map entry, a boxed seq and a list for each, and a dozen pointers followed per lookup.
 * Filled while its rank is indexed, then {@link #seal sealed}; read-only after.
 */
final class RecordsBySeq {
  private long[] recordSeqs = new long[0];
  private CollectiveRecord[] records = new CollectiveRecord[0];
  private int recordCount;
  /** Records announced by {@link #expect}: the arrays are allocated once, at that size. */
  private int expected;
  /** After sealing: the distinct seqs, ascending, and where each one's records start in {@link #records}. */
  private long[] seqs;
  private int[] starts;

  /** Announces one more record to be {@link #add added}. */
  void expect() {
    expected++;
  }

  /** Adds a record while the rank is indexed; records come oldest first (by record id), as a ring holds them. */
  void add(long seq, CollectiveRecord r) {
    if (recordCount == records.length) {
      int grown = Math.max(expected, Math.max(4, recordCount * 2));
      records = Arrays.copyOf(records, grown);
      recordSeqs = Arrays.copyOf(recordSeqs, grown);
    }
    records[recordCount] = r;
    recordSeqs[recordCount] = seq;
    recordCount++;
  }

  /** Groups the records by seq, in seq order, each seq's records in the order they were added. */
  void seal() {
    if (!isSorted()) {
      // A ring's seqs rise with its record ids except where a wall clock or a reordered dump says otherwise: a
      // stable sort keeps each seq's records (a coalesced group's, its end marker last) in issue order.
      Integer[] order = new Integer[recordCount];
      for (int i = 0; i < recordCount; i++) {
        order[i] = i;
      }
      Arrays.sort(order, (a, b) -> Long.compare(recordSeqs[a], recordSeqs[b]));
      CollectiveRecord[] sortedRecords = new CollectiveRecord[recordCount];
      long[] sortedSeqs = new long[recordCount];
      for (int i = 0; i < recordCount; i++) {
        sortedRecords[i] = records[order[i]];
        sortedSeqs[i] = recordSeqs[order[i]];
      }
      records = sortedRecords;
      recordSeqs = sortedSeqs;
    }
    int distinct = 0;
    for (int i = 0; i < recordCount; i++) {
      if (i == 0 || recordSeqs[i] != recordSeqs[i - 1]) {
        distinct++;
      }
    }
    seqs = new long[distinct];
    starts = new int[distinct + 1];
    int d = 0;
    for (int i = 0; i < recordCount; i++) {
      if (i == 0 || recordSeqs[i] != recordSeqs[i - 1]) {
        seqs[d] = recordSeqs[i];
        starts[d] = i;
        d++;
      }
    }
    starts[distinct] = recordCount;
  }

  private boolean isSorted() {
    for (int i = 1; i < recordCount; i++) {
      if (recordSeqs[i] < recordSeqs[i - 1]) {
        return false;
      }
    }
    return true;
  }

  /** How many distinct seqs. */
  int size() {
    return seqs.length;
  }

  /** The {@code i}-th seq in ascending order. */
  long seq(int i) {
    return seqs[i];
  }

  /** The records of the {@code i}-th seq, in the order the rank issued them. */
  List<CollectiveRecord> at(int i) {
    return new Slice(records, starts[i], starts[i + 1]);
  }

  /** The records of {@code seq}, or null when none is held. */
  List<CollectiveRecord> get(long seq) {
    int i = Arrays.binarySearch(seqs, seq);
    return i < 0 ? null : at(i);
  }

  boolean contains(long seq) {
    return Arrays.binarySearch(seqs, seq) >= 0;
  }

  /** Index of the lowest seq above {@code seq}; {@link #size} when none is. */
  int indexAbove(long seq) {
    int i = Arrays.binarySearch(seqs, seq);
    return i >= 0 ? i + 1 : -i - 1;
  }

  /** Index of the highest seq below {@code seq}; -1 when none is. */
  int indexBelow(long seq) {
    int i = Arrays.binarySearch(seqs, seq);
    return (i >= 0 ? i : -i - 1) - 1;
  }

  /** Every record, in seq order. */
  List<CollectiveRecord> all() {
    return new Slice(records, 0, recordCount);
  }

  /** A read-only view of a run of the records. */
  private static final class Slice extends AbstractList<CollectiveRecord> implements RandomAccess {
    private final CollectiveRecord[] records;
    private final int from;
    private final int to;

    Slice(CollectiveRecord[] records, int from, int to) {
      this.records = records;
      this.from = from;
      this.to = to;
    }

    @Override
    public CollectiveRecord get(int index) {
      if (index < 0 || index >= to - from) {
        throw new IndexOutOfBoundsException("index " + index + " of " + (to - from));
      }
      return records[from + index];
    }

    @Override
    public int size() {
      return to - from;
    }
  }
}
