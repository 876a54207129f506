package dev.frdiag.daemon.registry;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One rank's newest records as the daemon keeps them between snapshots: a record's own numbers (ids, seqs, state,
 * times) in columns, and what it shares with the rank's other records of the same kind of op (group, op, tensors,
 * stack: a record holding only those, shared with the job through {@link RecordInterner}) by reference. A record
 * as parsed from the wire is an object graph of about a kilobyte; here it is some 100 bytes, written without
 * building anything, and records are built only when an incident asks for the window (or the watchdog, as a group
 * nears the stall timeout, asks ahead of it). A record once built is kept until its slot changes,
 * so a hung rank's window, which no longer changes, is built once however often it is read.
 *
 * <p>Slots are taken by record id modulo the capacity, so the window holds the records whose ids are among the
 * newest {@code capacity} ids the rank sent, as its own ring does; a re-sent record (its state moved on) replaces its
 * earlier copy, and one older than the window is ignored. Not thread-safe: the job's lock guards it.
 */
final class RankWindow {
  private static final byte P2P = 1;
  private static final byte RETIRED = 2;

  private final int capacity;
  // Allocated on the first record: most of a large job's ranks hold one, but a job may have ranks that never send.
  private long[] recordIds;
  private long[] collectiveSeqs;
  private long[] p2pSeqs;
  private long[] opIds;
  private long[] created;
  private long[] started;
  private long[] completed;
  private long[] timeoutMs;
  private long[] commsIds;
  private double[] durationMs;
  private int[] peers;
  private int[] states;
  private byte[] flags;
  private CollectiveRecord[] shared;
  /** The record of each slot as last built; null until built and once the slot changes. */
  private CollectiveRecord[] built;
  /** What {@link #records} last returned; null once any slot changes. */
  private List<CollectiveRecord> lastRead;
  private long newestId = -1;

  RankWindow(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("window capacity must be at least 1, got " + capacity);
    }
    this.capacity = capacity;
  }

  /**
   * Keeps {@code r}'s own numbers (its record id is not negative), with {@code shared} standing for its group, op, tensors, thread, stack and
   * backend (and for whatever else of {@code r} is not one of its numbers).
   */
  void put(CollectiveRecord r, CollectiveRecord shared) {
    long id = r.getRecordId();
    if (recordIds == null) {
      allocate();
    }
    if (id <= newestId - capacity) {
      return;
    }
    int slot = (int) Long.remainderUnsigned(id, capacity);
    if (this.shared[slot] != null && recordIds[slot] > id) {
      return;
    }
    recordIds[slot] = id;
    collectiveSeqs[slot] = r.getCollectiveSeq();
    p2pSeqs[slot] = r.getP2PSeq();
    opIds[slot] = r.getOpId();
    created[slot] = r.getTimeCreatedNs();
    started[slot] = r.getTimeStartedNs();
    completed[slot] = r.getTimeCompletedNs();
    timeoutMs[slot] = r.getTimeoutMs();
    commsIds[slot] = r.getCommsId();
    durationMs[slot] = r.getDurationMs();
    peers[slot] = r.getPeer();
    states[slot] = r.getStateValue();
    flags[slot] = (byte) ((r.getIsP2P() ? P2P : 0) | (r.getRetired() ? RETIRED : 0));
    this.shared[slot] = shared;
    built[slot] = null;
    lastRead = null;
    newestId = Math.max(newestId, id);
  }

  /** The kept records, oldest first, unmodifiable: built where their slot changed since last read. */
  List<CollectiveRecord> records() {
    if (recordIds == null) {
      return List.of();
    }
    if (lastRead != null) {
      return lastRead;
    }
    List<CollectiveRecord> out = new ArrayList<>(capacity);
    long oldest = Math.max(0, newestId - capacity + 1);
    // Counted, not compared with newestId: ids run up to Long.MAX_VALUE.
    for (int i = 0; i <= newestId - oldest; i++) {
      long id = oldest + i;
      int slot = (int) Long.remainderUnsigned(id, capacity);
      if (shared[slot] == null || recordIds[slot] != id) {
        continue;
      }
      if (built[slot] == null) {
        built[slot] = build(slot);
      }
      out.add(built[slot]);
    }
    lastRead = List.copyOf(out);
    return lastRead;
  }

  private CollectiveRecord build(int slot) {
    CollectiveRecord.Builder b = shared[slot].toBuilder()
        .setRecordId(recordIds[slot])
        .setCollectiveSeq(collectiveSeqs[slot])
        .setP2PSeq(p2pSeqs[slot])
        .setOpId(opIds[slot])
        .setIsP2P((flags[slot] & P2P) != 0)
        .setRetired((flags[slot] & RETIRED) != 0)
        .setPeer(peers[slot])
        .setTimeCreatedNs(created[slot])
        .setTimeStartedNs(started[slot])
        .setTimeCompletedNs(completed[slot])
        .setTimeoutMs(timeoutMs[slot])
        .setCommsId(commsIds[slot])
        .setDurationMs(durationMs[slot])
        .setTemplateId(0);
    int state = states[slot];
    CollectiveState known = CollectiveState.forNumber(state);
    if (known != null) {
      b.setState(known);
    } else {
      b.setStateValue(state);
    }
    return b.build();
  }

  /** Forgets every record (a new process for the rank: its old ring is history). */
  void clear() {
    if (shared != null) {
      Arrays.fill(shared, null);
      Arrays.fill(built, null);
    }
    lastRead = null;
    newestId = -1;
  }

  private void allocate() {
    recordIds = new long[capacity];
    collectiveSeqs = new long[capacity];
    p2pSeqs = new long[capacity];
    opIds = new long[capacity];
    created = new long[capacity];
    started = new long[capacity];
    completed = new long[capacity];
    timeoutMs = new long[capacity];
    commsIds = new long[capacity];
    durationMs = new double[capacity];
    peers = new int[capacity];
    states = new int[capacity];
    flags = new byte[capacity];
    shared = new CollectiveRecord[capacity];
    built = new CollectiveRecord[capacity];
  }
}
