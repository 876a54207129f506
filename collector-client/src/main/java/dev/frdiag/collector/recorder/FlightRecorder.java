package dev.frdiag.collector.recorder;

import dev.frdiag.collector.ring.RecordRing;
import dev.frdiag.collector.ring.RecordView;
import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.Shape;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;

/**
 * One rank's flight recorder: the last {@code capacity} collectives and P2P ops it issued, with their sequence
 * numbers, comms_ids and device-side state.
 *
 * <p>The recording methods ({@link #enqueue}, {@link #enqueueP2p}, {@link #beginCoalesced},
 * {@link #endCoalesced}, {@link #started}, {@link #completed}) take no lock, allocate nothing and never throw
 * for a well-formed call; everything they store by reference is interned beforehand through {@link #op},
 * {@link #tensors} and {@link #stack}. Readers ({@link #read}, {@link #progress}) run on any thread.
 */
public final class FlightRecorder {
  /** PyTorch's default Flight Recorder size. */
  public static final int DEFAULT_CAPACITY = 2000;
  /** Stacks deeper than this are cut: the innermost frames are the ones that matter. */
  static final int MAX_FRAMES = 256;

  private final RecordRing ring;
  private final LongSupplier clockNanos;
  private final long timeoutMs;
  private final Interner<String> opNames = new Interner<>();
  private final Interner<TensorList.Key> tensorKeys = new Interner<>();
  private final List<TensorList> tensorLists = new CopyOnWriteArrayList<>();
  private final Interner<List<Frame>> stacks = new Interner<>();
  private final Interner<String> threadNames = new Interner<>();
  // Copy-on-write: the training thread reads it lock-free on every op; registration, which must check for a
  // duplicate name and add atomically, locks the list itself.
  private final List<ProcessGroupHandle> groups = new CopyOnWriteArrayList<>();
  private final ThreadLocal<int[]> threadId = ThreadLocal.withInitial(() -> new int[] {-1});
  private final OpName coalescedMarker;
  private final RecordRing.StateListener progressTracker = this::trackProgress;

  /**
   * @param capacity records kept, at least 1
   * @param clockNanos wall clock in epoch nanoseconds (injected so tests control time)
   * @param timeoutMs the process groups' collective timeout, recorded with every op; 0 when unknown
   */
  public FlightRecorder(int capacity, LongSupplier clockNanos, long timeoutMs) {
    this.ring = new RecordRing(capacity);
    this.clockNanos = Objects.requireNonNull(clockNanos, "clockNanos");
    if (timeoutMs < 0) {
      throw new IllegalArgumentException("timeoutMs must not be negative, got " + timeoutMs);
    }
    this.timeoutMs = timeoutMs;
    this.coalescedMarker = op("coalesced");
  }

  /** A recorder with PyTorch's defaults: 2000 records, the system clock, a 10-minute timeout. */
  public static FlightRecorder withDefaults() {
    return new FlightRecorder(DEFAULT_CAPACITY, FlightRecorder::epochNanos, 600_000);
  }

  /** Current wall-clock time in epoch nanoseconds. */
  public static long epochNanos() {
    java.time.Instant now = java.time.Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  public int capacity() {
    return ring.capacity();
  }

  /**
   * Registers a process group.
   *
   * @param ranks global ranks of the members in group-rank order
   * @throws IllegalArgumentException if the name is already registered or the members are invalid
   */
  public ProcessGroupHandle registerProcessGroup(String name, String desc, int[] ranks) {
    Objects.requireNonNull(name, "name");
    synchronized (groups) {
      for (ProcessGroupHandle g : groups) {
        if (g.name().equals(name)) {
          throw new IllegalArgumentException("process group '" + name + "' is already registered");
        }
      }
      ProcessGroupHandle handle = new ProcessGroupHandle(groups.size(), name, desc == null ? "" : desc,
          Objects.requireNonNull(ranks, "ranks").clone());
      groups.add(handle);
      return handle;
    }
  }

  /** The interned op name; call once per name, not per op. */
  public OpName op(String name) {
    Objects.requireNonNull(name, "name");
    return new OpName(opNames.intern(name), name);
  }

  /** The interned tensor list for these shapes and dtypes (one dtype per shape); call once per layout. */
  public TensorList tensors(long[][] shapes, String... dtypes) {
    TensorList.Key key = TensorList.Key.of(shapes, dtypes);
    synchronized (tensorLists) {
      int id = tensorKeys.intern(key);
      if (id == tensorLists.size()) {
        long[][] copy = new long[shapes.length][];
        for (int i = 0; i < shapes.length; i++) {
          copy[i] = shapes[i].clone();
        }
        tensorLists.add(new TensorList(id, copy, key.dtypes()));
      }
      return tensorLists.get(id);
    }
  }

  /** The interned call stack, innermost frame first. */
  public StackTrace stack(List<Frame> frames) {
    List<Frame> copy = List.copyOf(frames);
    return new StackTrace(stacks.intern(copy), copy);
  }

  /**
   * Records a collective issued on {@code pg}.
   *
   * @param stack the call stack, or null
   * @return the handle for {@link #started} and {@link #completed}
   */
  public long enqueue(ProcessGroupHandle pg, OpName op, TensorList inputs, TensorList outputs, StackTrace stack) {
    // A collective joins an open coalesced group only when the group batches collectives, as in PyTorch.
    long seq = pg.coalescedSeq != 0 && !pg.coalescedP2p ? pg.coalescedSeq : ++pg.collectiveSeq;
    long opId = ++pg.opId;
    pg.lastEnqueuedSeq = seq;
    return ring.append(pg.id, seq, 0, opId, op.id, false, -1, inputs.id, outputs.id, stackId(stack), thread(),
        clockNanos.getAsLong());
  }

  /**
   * Records a send or recv to/from {@code peerGlobalRank} on {@code pg}.
   *
   * @return the handle for {@link #started} and {@link #completed}
   */
  public long enqueueP2p(ProcessGroupHandle pg, OpName op, int peerGlobalRank, TensorList tensors,
      StackTrace stack) {
    long seq = pg.coalescedSeq != 0 && pg.coalescedP2p ? pg.coalescedSeq : ++pg.p2pSeq;
    long opId = ++pg.opId;
    pg.lastEnqueuedP2pSeq = seq;
    return ring.append(pg.id, 0, seq, opId, op.id, true, peerGlobalRank, tensors.id, tensors.id, stackId(stack),
        thread(), clockNanos.getAsLong());
  }

  /**
   * Opens a coalesced group on {@code pg}: the ops of its kind until {@link #endCoalesced} share one sequence
   * number (ops of the other kind keep their own numbering).
   *
   * @param p2p true for a batch of sends/recvs (shares a p2p_seq), false for collectives (a collective_seq)
   */
  public void beginCoalesced(ProcessGroupHandle pg, boolean p2p) {
    if (pg.coalescedSeq != 0) {
      return;
    }
    pg.coalescedP2p = p2p;
    pg.coalescedSeq = p2p ? ++pg.p2pSeq : ++pg.collectiveSeq;
  }

  /**
   * Closes the coalesced group with its end marker record ("coalesced"), which completes with the group.
   *
   * @return the marker's handle, or -1 when no group was open
   */
  public long endCoalesced(ProcessGroupHandle pg) {
    long seq = pg.coalescedSeq;
    if (seq == 0) {
      return -1;
    }
    pg.coalescedSeq = 0;
    boolean p2p = pg.coalescedP2p;
    if (p2p) {
      pg.lastEnqueuedP2pSeq = seq;
    } else {
      pg.lastEnqueuedSeq = seq;
    }
    return ring.append(pg.id, p2p ? 0 : seq, p2p ? seq : 0, pg.opId, coalescedMarker.id, p2p, -1, -1, -1,
        StackTrace.NONE, thread(), clockNanos.getAsLong());
  }

  /** The device started the op; ignored when the record was already overwritten. */
  public void started(long handle) {
    ring.markStarted(handle, clockNanos.getAsLong(), progressTracker);
  }

  /** The device finished the op; ignored when the record was already overwritten. */
  public void completed(long handle) {
    ring.markCompleted(handle, clockNanos.getAsLong(), progressTracker);
  }

  private void trackProgress(int groupId, boolean p2p, long seq, byte newState, long timeNs) {
    ProcessGroupHandle pg = groups.get(groupId);
    if (newState == RecordRing.COMPLETED) {
      if (p2p) {
        if (seq > pg.lastCompletedP2pSeq) {
          pg.lastCompletedP2pSeq = seq;
        }
      } else if (seq > pg.lastCompletedSeq) {
        pg.lastCompletedSeq = seq;
      }
      pg.lastProgressNs = timeNs;
    } else if (!p2p && seq > pg.lastStartedSeq) {
      pg.lastStartedSeq = seq;
    }
  }

  // ---- reader side ----

  /** Id the next record will get; records {@code [max(0, next - capacity), next)} are in the ring. */
  public long nextRecordId() {
    return ring.nextRecordId();
  }

  /** Copies record {@code id} into {@code view}; false when it is not (or no longer) in the ring. */
  public boolean read(long id, RecordView view) {
    return ring.read(id, view);
  }

  /** Like {@link #read}, but tells an overwritten record from a slot that is busy right now. */
  public RecordRing.ReadResult tryRead(long id, RecordView view) {
    return ring.tryRead(id, view);
  }

  /**
   * The comms_id of the record in {@code view}. Derived from its group, seq and kind when asked rather than
   * stored: hashing it at enqueue cost as much as the rest of recording an op, and only readers need it.
   */
  public long commsId(RecordView view) {
    ProcessGroupHandle pg = groups.get(view.processGroup);
    return CommsId.of(pg.name(), view.isP2p ? view.p2pSeq : view.collectiveSeq, view.isP2p, pg.layout);
  }

  /** Converts a view to its wire form; frames are referenced by this recorder's stack ids. */
  public CollectiveRecord toProto(RecordView view) {
    CollectiveRecord.Builder b = scalars(view)
        .setProcessGroup(groups.get(view.processGroup).name())
        .setOp(opNames.get(view.op))
        .setBackend("nccl");
    if (view.thread >= 0) {
      b.setThreadName(threadNames.get(view.thread));
    }
    if (view.inputs >= 0) {
      addTensors(tensorLists.get(view.inputs), b, true);
    }
    if (view.outputs >= 0) {
      addTensors(tensorLists.get(view.outputs), b, false);
    }
    if (view.stack >= 0) {
      for (int id : frameIdsOfStack(view.stack)) {
        b.addFrameIds(id);
      }
    }
    return b.build();
  }

  /**
   * Converts a view to its wire form without what its template holds (group, op, tensors, thread, stack, backend):
   * the record names {@code templateId}, which the sender has sent as {@code RecordTemplates.of(templateId,
   * toProto(view))} for a view of the same group, op, tensors, thread and stack.
   */
  public CollectiveRecord toProto(RecordView view, int templateId) {
    return scalars(view).setTemplateId(templateId).build();
  }

  private CollectiveRecord.Builder scalars(RecordView view) {
    return CollectiveRecord.newBuilder()
        .setRecordId(view.recordId)
        .setCollectiveSeq(view.collectiveSeq)
        .setP2PSeq(view.p2pSeq)
        .setOpId(view.opId)
        .setIsP2P(view.isP2p)
        .setPeer(view.peer)
        .setState(CollectiveState.forNumber(view.state))
        .setTimeCreatedNs(view.timeCreatedNs)
        .setTimeStartedNs(view.timeStartedNs)
        .setTimeCompletedNs(view.timeCompletedNs)
        .setTimeoutMs(timeoutMs)
        .setCommsId(commsId(view));
  }

  /** The frame that {@link #toProto} refers to by {@code frameId}. */
  public Frame frame(int frameId) {
    return stacks.get(frameId >>> 8).get(frameId & 0xff);
  }

  /** The stack id part of a frame id, so a sender can ship each stack's frames once. */
  public static int stackOfFrame(int frameId) {
    return frameId >>> 8;
  }

  /** Every frame of stack {@code stackId} with its frame id. */
  public List<Integer> frameIdsOfStack(int stackId) {
    int size = Math.min(stacks.get(stackId).size(), MAX_FRAMES);
    List<Integer> ids = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      ids.add(frameId(stackId, i));
    }
    return ids;
  }

  /** The process groups registered so far, in wire form. */
  public List<ProcessGroup> processGroups() {
    List<ProcessGroup> out = new ArrayList<>(groups.size());
    for (ProcessGroupHandle g : groups) {
      ProcessGroup.Builder b = ProcessGroup.newBuilder().setName(g.name()).setDesc(g.desc())
          .setGlobalRankStart(g.layout.start()).setGlobalRankStride(g.layout.stride())
          .setLocalId(Integer.toString(g.id));
      for (int r : g.ranks()) {
        b.addRanks(r);
      }
      out.add(b.build());
    }
    return out;
  }

  /** Number of process groups registered so far. */
  public int processGroupCount() {
    return groups.size();
  }

  /** Progress on every group that has issued anything. */
  public List<ProcessGroupProgress> progress() {
    List<ProcessGroupProgress> out = new ArrayList<>(groups.size());
    for (ProcessGroupHandle g : groups) {
      if (g.lastEnqueuedSeq < 0 && g.lastEnqueuedP2pSeq < 0) {
        continue;
      }
      out.add(ProcessGroupProgress.newBuilder().setProcessGroup(g.name())
          .setLastEnqueuedSeq(g.lastEnqueuedSeq).setLastStartedSeq(g.lastStartedSeq)
          .setLastCompletedSeq(g.lastCompletedSeq).setLastEnqueuedP2PSeq(g.lastEnqueuedP2pSeq)
          .setLastCompletedP2PSeq(g.lastCompletedP2pSeq).setLastProgressNs(g.lastProgressNs).build());
    }
    return out;
  }

  /** Updates the ring gave up on because a slot stayed busy; expected to stay 0. */
  public long lostUpdates() {
    return ring.lostUpdates();
  }

  private static int frameId(int stackId, int index) {
    return (stackId << 8) | index;
  }

  private static void addTensors(TensorList list, CollectiveRecord.Builder b, boolean input) {
    for (long[] shape : list.shapes()) {
      Shape.Builder s = Shape.newBuilder();
      for (long d : shape) {
        s.addDims(d);
      }
      if (input) {
        b.addInputSizes(s);
      } else {
        b.addOutputSizes(s);
      }
    }
    if (input) {
      b.addAllInputDtypes(list.dtypes());
    } else {
      b.addAllOutputDtypes(list.dtypes());
    }
  }

  private static int stackId(StackTrace stack) {
    return stack == null ? StackTrace.NONE : stack.id;
  }

  private int thread() {
    int[] cached = threadId.get();
    if (cached[0] < 0) {
      cached[0] = threadNames.intern(Thread.currentThread().getName());
    }
    return cached[0];
  }
}
