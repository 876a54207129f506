package dev.frdiag.analysis;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Where each member of one stuck process group stands around its stuck seq: the grid a report draws, rows of ranks
 * and columns of seqs {@code firstSeq..firstSeq + columns - 1}.
 *
 * @param collective the stuck operation the window is centred on
 * @param rootCause true when it is a root cause, false when it only waits on another stuck operation
 * @param firstSeq the seq of the first column
 * @param startsRecorded true when the members' records show device starts, so {@link Cell#ISSUED} means "issued,
 *     device not started" rather than "issued, not completed"
 * @param rows members that share a host and the same cells, ordered by their lowest rank
 */
public record GroupProgress(CollectiveRef collective, boolean rootCause, long firstSeq, boolean startsRecorded,
    List<Row> rows) {

  /** Seqs shown before the stuck one: enough to see who completed what led up to it. */
  static final int BEFORE = 3;
  /** Seqs shown after the stuck one: enough to see who ran ahead of it. */
  static final int AFTER = 2;
  /** The most groups a report pictures; more stuck groups are listed, not drawn. */
  static final int MAX_GROUPS = 6;

  public GroupProgress {
    Objects.requireNonNull(collective, "collective");
    rows = List.copyOf(rows);
  }

  /** What one member did with one seq, written in {@link Row#cells()} as its {@linkplain #code() letter}. */
  public enum Cell {
    /** Its device completed it. */
    COMPLETED('C'),
    /** Its device started it and has not completed it. */
    STARTED('S'),
    /** It issued it; its device never started it (or starts are not recorded). */
    ISSUED('I'),
    /** It never issued it. */
    NOT_ISSUED('N'),
    /** Nothing usable is known of the member. */
    NO_EVIDENCE('?');

    private final char code;

    Cell(char code) {
      this.code = code;
    }

    /** The letter {@link Row#cells()} uses. */
    public char code() {
      return code;
    }

    /**
     * The cell written as {@code code}.
     *
     * @throws IllegalArgumentException naming the letter when it is none of the cells'
     */
    public static Cell of(char code) {
      for (Cell c : values()) {
        if (c.code == code) {
          return c;
        }
      }
      throw new IllegalArgumentException("unknown cell '" + code + "'");
    }
  }

  /**
   * Members that look the same in the grid.
   *
   * @param host their host, "?" when unknown
   * @param ranks sorted global ranks
   * @param cells one {@link Cell#code()} per column
   * @param lost true when their streams ended without a goodbye
   * @param culprit true when the verdict blames them
   */
  public record Row(String host, List<Integer> ranks, String cells, boolean lost, boolean culprit) {
    public Row {
      Objects.requireNonNull(host, "host");
      Objects.requireNonNull(cells, "cells");
      ranks = List.copyOf(ranks);
      for (int i = 0; i < cells.length(); i++) {
        Cell.of(cells.charAt(i));
      }
    }

    /** The cell of column {@code i}. */
    public Cell cell(int i) {
      return Cell.of(cells.charAt(i));
    }
  }

  /** The number of seq columns. */
  public int columns() {
    return rows.isEmpty() ? 0 : rows.get(0).cells().length();
  }

  /**
   * The pictures of a job's stuck groups, one per group (its first stuck operation), at most {@link #MAX_GROUPS}:
   * first the operation the verdict names, then the stuck group with the most members (where the whole job
   * stands), then the others, root causes first. A send/recv in a group of more than two ranks is left out: its p2p
   * seqs count each rank's own operations, so a column would not be one operation.
   */
  static List<GroupProgress> of(JobIndex index, StuckOperations stuck, CollectiveRef primary,
      List<Integer> culprits) {
    Set<Integer> blamed = new TreeSet<>(culprits);
    List<StuckOp> drawable = stuck.all().stream().filter(op -> op.owner < 0).sorted(StuckOp.ROOTS_FIRST).toList();
    List<StuckOp> order = new ArrayList<>();
    drawable.stream().filter(op -> op.ref.equals(primary)).findFirst().ifPresent(order::add);
    drawable.stream().max(Comparator.comparingLong((StuckOp op) -> op.group.size())).ifPresent(order::add);
    order.addAll(drawable);
    // One picture per group and kind (collective or p2p).
    Set<List<Object>> drawn = new HashSet<>();
    List<GroupProgress> pictures = new ArrayList<>();
    for (StuckOp op : order) {
      if (pictures.size() == MAX_GROUPS || !drawn.add(List.of(op.group, op.p2p))) {
        continue;
      }
      List<Integer> members = index.members.getOrDefault(op.group, List.of());
      long first = Math.max(0, op.seq - BEFORE);
      long last = op.seq + AFTER;
      // Members with the same host, cells and standing share a row; a LinkedHashMap keeps rank order.
      Map<List<Object>, List<Integer>> rows = new LinkedHashMap<>();
      boolean starts = false;
      for (int rank : members) {
        StringBuilder cells = new StringBuilder();
        for (long seq = first; seq <= last; seq++) {
          cells.append(cell(stuck.stateOf(rank, op.group, seq, op.p2p)).code());
        }
        RankIndex r = index.rank(rank);
        starts |= r != null && r.recordsStarts;
        rows.computeIfAbsent(List.of(index.host(rank), cells.toString(), index.isLost(rank), blamed.contains(rank)),
            k -> new ArrayList<>()).add(rank);
      }
      List<Row> drawnRows = new ArrayList<>();
      rows.forEach((k, ranks) -> drawnRows.add(new Row((String) k.get(0), ranks, (String) k.get(1),
          (Boolean) k.get(2), (Boolean) k.get(3))));
      pictures.add(new GroupProgress(op.ref, op.isRoot(), first, starts, drawnRows));
    }
    return pictures;
  }

  private static Cell cell(MemberState s) {
    return switch (s) {
      case DONE -> Cell.COMPLETED;
      case WAITING -> Cell.STARTED;
      case ISSUED -> Cell.ISSUED;
      case NOT_ISSUED -> Cell.NOT_ISSUED;
      case UNKNOWN -> Cell.NO_EVIDENCE;
    };
  }
}
