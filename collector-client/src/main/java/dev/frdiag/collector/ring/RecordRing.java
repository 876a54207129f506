package dev.frdiag.collector.ring;

import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A fixed-capacity ring of collective records kept in preallocated primitive arrays, overwriting the oldest.
 *
 * <p>Writers (the thread issuing collectives, and whoever observes device start/completion) never block, never
 * allocate and never throw: each slot is guarded by a seqlock whose version is odd while a write is in
 * progress. A writer that finds the slot busy retries a bounded number of times and then gives up, counting
 * the lost update. Readers copy a slot into a {@link RecordView} and retry when the version moved, so they
 * never see a torn record.
 */
public final class RecordRing {
  /** State codes stored per slot; the same numbers as frdiag.v1.CollectiveState. */
  public static final byte SCHEDULED = 1;
  public static final byte STARTED = 2;
  public static final byte COMPLETED = 3;

  private static final int WRITE_ATTEMPTS = 64;
  private static final int READ_ATTEMPTS = 1_000;

  private final int capacity;
  private final AtomicLongArray versions;
  private final AtomicLong nextRecordId = new AtomicLong();
  private final AtomicLong lostUpdates = new AtomicLong();
  /**
   * Per slot, the last id whose append gave up because the slot stayed busy: that record will never be written,
   * so a reader must not wait for it.
   */
  private final AtomicLongArray abandonedIds;

  // Slot fields. Written only inside a slot's odd-version window, read only between two equal even versions.
  private final long[] recordId;
  private final int[] processGroup;
  private final long[] collectiveSeq;
  private final long[] p2pSeq;
  private final long[] opId;
  private final int[] op;
  private final boolean[] isP2p;
  private final int[] peer;
  private final int[] inputs;
  private final int[] outputs;
  private final int[] stack;
  private final int[] thread;
  private final byte[] state;
  private final long[] timeCreatedNs;
  private final long[] timeStartedNs;
  private final long[] timeCompletedNs;

  /**
   * @param capacity number of records kept, at least 1
   */
  public RecordRing(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("ring capacity must be at least 1, got " + capacity);
    }
    this.capacity = capacity;
    versions = new AtomicLongArray(capacity);
    abandonedIds = new AtomicLongArray(capacity);
    for (int i = 0; i < capacity; i++) {
      abandonedIds.set(i, -1);
    }
    recordId = new long[capacity];
    processGroup = new int[capacity];
    collectiveSeq = new long[capacity];
    p2pSeq = new long[capacity];
    opId = new long[capacity];
    op = new int[capacity];
    isP2p = new boolean[capacity];
    peer = new int[capacity];
    inputs = new int[capacity];
    outputs = new int[capacity];
    stack = new int[capacity];
    thread = new int[capacity];
    state = new byte[capacity];
    timeCreatedNs = new long[capacity];
    timeStartedNs = new long[capacity];
    timeCompletedNs = new long[capacity];
  }

  public int capacity() {
    return capacity;
  }

  /** Id the next appended record will get; every id below it has been handed out. */
  public long nextRecordId() {
    return nextRecordId.get();
  }

  /** Updates that were given up because a slot stayed busy (a sign of heavy contention, expected to be 0). */
  public long lostUpdates() {
    return lostUpdates.get();
  }

  /**
   * Appends a SCHEDULED record, overwriting the oldest when full.
   *
   * @return the record id, the handle for {@link #markStarted} and {@link #markCompleted}
   */
  public long append(int processGroup, long collectiveSeq, long p2pSeq, long opId, int op, boolean isP2p,
      int peer, int inputs, int outputs, int stack, int thread, long timeCreatedNs) {
    long id = nextRecordId.getAndIncrement();
    int slot = (int) (id % capacity);
    if (!beginWrite(slot)) {
      abandonedIds.set(slot, id);
      return id;
    }
    this.recordId[slot] = id;
    this.processGroup[slot] = processGroup;
    this.collectiveSeq[slot] = collectiveSeq;
    this.p2pSeq[slot] = p2pSeq;
    this.opId[slot] = opId;
    this.op[slot] = op;
    this.isP2p[slot] = isP2p;
    this.peer[slot] = peer;
    this.inputs[slot] = inputs;
    this.outputs[slot] = outputs;
    this.stack[slot] = stack;
    this.thread[slot] = thread;
    this.state[slot] = SCHEDULED;
    this.timeCreatedNs[slot] = timeCreatedNs;
    this.timeStartedNs[slot] = 0;
    this.timeCompletedNs[slot] = 0;
    endWrite(slot);
    return id;
  }

  /**
   * Told which group and seq a state change concerns and when it happened, so progress is tracked without a
   * second read of the slot or the clock.
   */
  @FunctionalInterface
  public interface StateListener {
    void onStateChange(int processGroup, boolean isP2p, long seq, byte newState, long timeNs);
  }

  /** Marks a record started; a no-op when it was already overwritten or is past that state. */
  public void markStarted(long id, long timeNs, StateListener listener) {
    transition(id, STARTED, timeNs, listener);
  }

  /** Marks a record completed; a no-op when it was already overwritten or completed. */
  public void markCompleted(long id, long timeNs, StateListener listener) {
    transition(id, COMPLETED, timeNs, listener);
  }

  private void transition(long id, byte newState, long timeNs, StateListener listener) {
    int slot = (int) (id % capacity);
    if (!beginWrite(slot)) {
      return;
    }
    boolean changed = recordId[slot] == id && state[slot] < newState;
    int group = processGroup[slot];
    boolean p2p = isP2p[slot];
    long seq = p2p ? p2pSeq[slot] : collectiveSeq[slot];
    if (changed) {
      state[slot] = newState;
      if (newState == STARTED) {
        timeStartedNs[slot] = timeNs;
      } else {
        timeCompletedNs[slot] = timeNs;
      }
    }
    endWrite(slot);
    if (changed) {
      listener.onStateChange(group, p2p, seq, newState, timeNs);
    }
  }

  /** What {@link #read} found. */
  public enum ReadResult {
    /** The record was copied. */
    OK,
    /** The record is no longer in the ring (overwritten), or its append gave up and it will never be written. */
    GONE,
    /** A writer held the slot for the whole read; try again later. */
    BUSY,
    /**
     * Not written yet: the id was handed out (or is about to be) but its writer has not filled the slot, which still
     * holds an older record. Try again later; it is not lost.
     */
    PENDING
  }

  /**
   * Copies record {@code id} into {@code into}, consistently.
   *
   * @return false when the record has been overwritten, is not written yet, or stayed busy for too long
   */
  public boolean read(long id, RecordView into) {
    return tryRead(id, into) == ReadResult.OK;
  }

  /** Copies record {@code id} into {@code into}, consistently, saying why when it could not. */
  public ReadResult tryRead(long id, RecordView into) {
    if (id < 0) {
      return ReadResult.GONE;
    }
    if (id >= nextRecordId.get()) {
      return ReadResult.PENDING;
    }
    int slot = (int) (id % capacity);
    for (int attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      long before = versions.get(slot);
      if ((before & 1) != 0) {
        Thread.onSpinWait();
        continue;
      }
      into.recordId = recordId[slot];
      into.processGroup = processGroup[slot];
      into.collectiveSeq = collectiveSeq[slot];
      into.p2pSeq = p2pSeq[slot];
      into.opId = opId[slot];
      into.op = op[slot];
      into.isP2p = isP2p[slot];
      into.peer = peer[slot];
      into.inputs = inputs[slot];
      into.outputs = outputs[slot];
      into.stack = stack[slot];
      into.thread = thread[slot];
      into.state = state[slot];
      into.timeCreatedNs = timeCreatedNs[slot];
      into.timeStartedNs = timeStartedNs[slot];
      into.timeCompletedNs = timeCompletedNs[slot];
      // Order the field reads before the version re-check (StampedLock.validate does the same).
      VarHandle.acquireFence();
      if (versions.get(slot) == before) {
        if (before != 0 && into.recordId == id) {
          return ReadResult.OK;
        }
        // Ids are handed out before their slot is written, so a slot still holding an older record (or none) means
        // this id's writer has not got there yet; only a newer record means it was overwritten.
        boolean older = before == 0 || into.recordId < id;
        return older && abandonedIds.get(slot) != id ? ReadResult.PENDING : ReadResult.GONE;
      }
    }
    return ReadResult.BUSY;
  }

  // Package-private so a test can hold a slot busy.
  boolean beginWrite(int slot) {
    for (int attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      long version = versions.get(slot);
      if ((version & 1) == 0 && versions.compareAndSet(slot, version, version + 1)) {
        return true;
      }
      Thread.onSpinWait();
    }
    lostUpdates.incrementAndGet();
    return false;
  }

  void endWrite(int slot) {
    // Release publishes the field writes before the version turns even again.
    versions.lazySet(slot, versions.get(slot) + 1);
  }
}
