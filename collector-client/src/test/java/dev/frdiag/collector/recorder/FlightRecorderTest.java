package dev.frdiag.collector.recorder;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.collector.ring.RecordRing;
import dev.frdiag.collector.ring.RecordView;
import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class FlightRecorderTest {
  private static final int[] WORLD = {0, 1, 2, 3};

  /** Epoch nanoseconds as the test sets them, so every timestamp in a record is predictable. */
  private final AtomicLong clock = new AtomicLong(1_000_000);
  private final FlightRecorder recorder = new FlightRecorder(64, clock::get, 600_000);
  private final ProcessGroupHandle world = recorder.registerProcessGroup("0", "default_pg", WORLD);
  private final OpName allReduce = recorder.op("all_reduce");
  private final OpName allGather = recorder.op("all_gather");
  private final OpName send = recorder.op("send");
  private final OpName recv = recorder.op("recv");
  private final TensorList oneK = recorder.tensors(new long[][] {{1024}}, "Float");

  private CollectiveRecord record(long handle) {
    return record(recorder, handle);
  }

  private static CollectiveRecord record(FlightRecorder recorder, long handle) {
    RecordView view = new RecordView();
    assertThat(recorder.read(handle, view)).as("record %d is in the ring", handle).isTrue();
    return recorder.toProto(view);
  }

  private long collective() {
    return recorder.enqueue(world, allReduce, oneK, oneK, null);
  }

  private long sendTo(int peer) {
    return recorder.enqueueP2p(world, send, peer, oneK, null);
  }

  private long recvFrom(int peer) {
    return recorder.enqueueP2p(world, recv, peer, oneK, null);
  }

  private ProcessGroupProgress progressOf(String group) {
    return recorder.progress().stream().filter(p -> p.getProcessGroup().equals(group)).findFirst()
        .orElseThrow(() -> new AssertionError("no progress for group " + group));
  }

  // ---- sequence numbering (PyTorch: collective_seq_id, p2p_seq_id, op_id) ----

  @Test
  void plainCollectivesAdvanceCollectiveSeqAndOpIdOncePerOp() {
    List<CollectiveRecord> records = List.of(record(collective()), record(collective()), record(collective()));

    assertThat(records).extracting(CollectiveRecord::getCollectiveSeq).containsExactly(1L, 2L, 3L);
    assertThat(records).extracting(CollectiveRecord::getOpId).containsExactly(1L, 2L, 3L);
    assertThat(records).extracting(CollectiveRecord::getP2PSeq).containsOnly(0L);
    assertThat(records).extracting(CollectiveRecord::getIsP2P).containsOnly(false);
    assertThat(records).extracting(CollectiveRecord::getRecordId).containsExactly(0L, 1L, 2L);
  }

  @Test
  void coalescedCollectivesShareOneCollectiveSeqWhileOpIdAdvancesPerOp() {
    long before = collective();
    recorder.beginCoalesced(world, false);
    long a = collective();
    long b = recorder.enqueue(world, allGather, oneK, recorder.tensors(new long[][] {{4096}}, "Float"), null);
    long c = collective();
    long marker = recorder.endCoalesced(world);
    long after = collective();

    assertThat(List.of(record(a), record(b), record(c))).extracting(CollectiveRecord::getCollectiveSeq)
        .containsOnly(2L);
    assertThat(List.of(record(a), record(b), record(c))).extracting(CollectiveRecord::getOpId)
        .containsExactly(2L, 3L, 4L);
    CollectiveRecord end = record(marker);
    assertThat(end.getOp()).isEqualTo("coalesced");
    assertThat(end.getCollectiveSeq()).isEqualTo(2);
    assertThat(end.getIsP2P()).isFalse();
    // The end marker closes the group rather than being an op of its own: it does not take an op_id.
    assertThat(end.getOpId()).isEqualTo(4);
    assertThat(record(before).getCollectiveSeq()).isEqualTo(1);
    assertThat(record(after).getCollectiveSeq()).isEqualTo(3);
    assertThat(record(after).getOpId()).isEqualTo(5);
  }

  @Test
  void p2pOpsAdvanceP2pSeqAndLeaveCollectiveSeqUntouched() {
    long c1 = collective();
    long s1 = sendTo(1);
    long r1 = recvFrom(3);
    long c2 = collective();

    CollectiveRecord sent = record(s1);
    CollectiveRecord received = record(r1);
    assertThat(List.of(sent, received)).extracting(CollectiveRecord::getP2PSeq).containsExactly(1L, 2L);
    assertThat(List.of(sent, received)).extracting(CollectiveRecord::getCollectiveSeq).containsOnly(0L);
    assertThat(List.of(sent, received)).extracting(CollectiveRecord::getIsP2P).containsOnly(true);
    assertThat(List.of(sent, received)).extracting(CollectiveRecord::getPeer).containsExactly(1, 3);
    assertThat(record(c1).getCollectiveSeq()).isEqualTo(1);
    assertThat(record(c2).getCollectiveSeq()).isEqualTo(2);
    assertThat(List.of(record(c1), sent, received, record(c2))).extracting(CollectiveRecord::getOpId)
        .containsExactly(1L, 2L, 3L, 4L);
  }

  @Test
  void coalescedP2pBatchSharesOneP2pSeqAndEndsWithAP2pMarker() {
    long first = sendTo(1);
    recorder.beginCoalesced(world, true);
    long s = sendTo(2);
    long r = recvFrom(2);
    long s2 = sendTo(3);
    long marker = recorder.endCoalesced(world);
    long next = sendTo(1);
    long c = collective();

    assertThat(record(first).getP2PSeq()).isEqualTo(1);
    assertThat(List.of(record(s), record(r), record(s2), record(marker)))
        .extracting(CollectiveRecord::getP2PSeq).containsOnly(2L);
    assertThat(List.of(record(s), record(r), record(s2))).extracting(CollectiveRecord::getOpId)
        .containsExactly(2L, 3L, 4L);
    CollectiveRecord end = record(marker);
    assertThat(end.getOp()).isEqualTo("coalesced");
    assertThat(end.getIsP2P()).isTrue();
    assertThat(end.getCollectiveSeq()).isZero();
    assertThat(record(next).getP2PSeq()).isEqualTo(3);
    assertThat(record(c).getCollectiveSeq()).as("a P2P batch does not use a collective seq").isEqualTo(1);
  }

  @Test
  void opsOfTheOtherKindInsideAnOpenCoalescedGroupKeepTheirOwnNumbering() {
    recorder.beginCoalesced(world, false);
    long c1 = collective();
    long p1 = sendTo(1);
    long c2 = collective();
    long p2 = recvFrom(1);
    long collectiveMarker = recorder.endCoalesced(world);

    assertThat(List.of(record(c1), record(c2), record(collectiveMarker)))
        .extracting(CollectiveRecord::getCollectiveSeq).containsOnly(1L);
    assertThat(List.of(record(p1), record(p2))).extracting(CollectiveRecord::getP2PSeq).containsExactly(1L, 2L);
    assertThat(record(collectiveMarker).getIsP2P()).isFalse();

    recorder.beginCoalesced(world, true);
    long p3 = sendTo(2);
    long c3 = collective();
    long p4 = recvFrom(2);
    long c4 = collective();
    long p2pMarker = recorder.endCoalesced(world);

    assertThat(List.of(record(p3), record(p4), record(p2pMarker))).extracting(CollectiveRecord::getP2PSeq)
        .containsOnly(3L);
    assertThat(List.of(record(c3), record(c4))).extracting(CollectiveRecord::getCollectiveSeq)
        .containsExactly(2L, 3L);
    assertThat(record(p2pMarker).getIsP2P()).isTrue();
    assertThat(List.of(record(c1), record(p1), record(c2), record(p2), record(p3), record(c3), record(p4),
        record(c4))).extracting(CollectiveRecord::getOpId).containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L);
  }

  @Test
  void endCoalescedWithoutAnOpenGroupRecordsNothing() {
    collective();

    assertThat(recorder.endCoalesced(world)).isEqualTo(-1);
    assertThat(recorder.nextRecordId()).isEqualTo(1);
  }

  // ---- comms_id ----

  @Test
  void commsIdOfEveryRecordIsDerivedFromGroupSeqKindAndLayout() {
    // Members that are not an arithmetic progression take the member-digest layout.
    int[] scattered = {5, 0, 3};
    ProcessGroupHandle odd = recorder.registerProcessGroup("7", "custom", scattered);
    long c = collective();
    long p = sendTo(2);
    recorder.beginCoalesced(world, false);
    long member = collective();
    long marker = recorder.endCoalesced(world);
    long onOdd = recorder.enqueue(odd, allReduce, oneK, oneK, null);
    long p2pOnOdd = recorder.enqueueP2p(odd, send, 3, oneK, null);

    CommsId.GroupLayout worldLayout = CommsId.layoutOf(WORLD);
    CommsId.GroupLayout oddLayout = CommsId.layoutOf(scattered);
    assertThat(record(c).getCommsId()).isEqualTo(CommsId.of("0", 1, false, worldLayout));
    assertThat(record(p).getCommsId()).isEqualTo(CommsId.of("0", 1, true, worldLayout));
    assertThat(record(member).getCommsId()).isEqualTo(CommsId.of("0", 2, false, worldLayout));
    assertThat(record(marker).getCommsId()).isEqualTo(record(member).getCommsId());
    assertThat(record(onOdd).getCommsId()).isEqualTo(CommsId.of("7", 1, false, oddLayout));
    assertThat(record(p2pOnOdd).getCommsId()).isEqualTo(CommsId.of("7", 1, true, oddLayout));
    assertThat(record(c).getCommsId()).as("P2P and collective ids with equal seqs differ")
        .isNotEqualTo(record(p).getCommsId());
  }

  // ---- progress ----

  @Test
  void progressReportsOnlyGroupsThatIssuedSomething() {
    recorder.registerProcessGroup("1", "idle", new int[] {0, 1});
    collective();

    assertThat(recorder.progress()).extracting(ProcessGroupProgress::getProcessGroup).containsExactly("0");
  }

  @Test
  void progressFollowsEnqueuedStartedAndCompletedSeqsPerKind() {
    long c1 = collective();
    long c2 = collective();
    long c3 = collective();
    long s1 = sendTo(1);
    long r1 = recvFrom(1);

    ProcessGroupProgress issued = progressOf("0");
    assertThat(issued.getLastEnqueuedSeq()).isEqualTo(3);
    assertThat(issued.getLastStartedSeq()).isEqualTo(-1);
    assertThat(issued.getLastCompletedSeq()).isEqualTo(-1);
    assertThat(issued.getLastEnqueuedP2PSeq()).isEqualTo(2);
    assertThat(issued.getLastCompletedP2PSeq()).isEqualTo(-1);
    assertThat(issued.getLastProgressNs()).isZero();

    clock.set(2_000_000);
    recorder.started(c1);
    recorder.started(c2);
    recorder.started(s1);
    assertThat(progressOf("0").getLastStartedSeq()).isEqualTo(2);
    assertThat(progressOf("0").getLastProgressNs()).as("starting is not progress").isZero();

    clock.set(3_000_000);
    recorder.completed(c2);
    recorder.completed(c1);
    recorder.completed(r1);
    ProcessGroupProgress done = progressOf("0");
    assertThat(done.getLastCompletedSeq()).as("an older seq completing late does not move it back").isEqualTo(2);
    assertThat(done.getLastCompletedP2PSeq()).isEqualTo(2);
    assertThat(done.getLastProgressNs()).isEqualTo(3_000_000);
    assertThat(done.getLastEnqueuedSeq()).isEqualTo(3);

    clock.set(4_000_000);
    recorder.completed(c3);
    assertThat(progressOf("0").getLastCompletedSeq()).isEqualTo(3);
    assertThat(progressOf("0").getLastProgressNs()).isEqualTo(4_000_000);
  }

  @Test
  void progressCountsACoalescedGroupAsOneEnqueuedSeq() {
    recorder.beginCoalesced(world, false);
    long a = collective();
    long b = collective();
    long marker = recorder.endCoalesced(world);

    assertThat(progressOf("0").getLastEnqueuedSeq()).isEqualTo(1);
    recorder.completed(a);
    recorder.completed(b);
    recorder.completed(marker);
    assertThat(progressOf("0").getLastCompletedSeq()).isEqualTo(1);
    long next = collective();
    assertThat(record(next).getCollectiveSeq()).isEqualTo(2);
    assertThat(progressOf("0").getLastEnqueuedSeq()).isEqualTo(2);
  }

  // ---- ring window ----

  @Test
  void wrappingKeepsExactlyTheNewestCapacityRecordsWithTheirContents() {
    int capacity = 8;
    AtomicLong time = new AtomicLong(100);
    FlightRecorder small = new FlightRecorder(capacity, time::get, 30_000);
    ProcessGroupHandle[] groups = {
        small.registerProcessGroup("0", "default_pg", new int[] {0, 1}),
        small.registerProcessGroup("1", "tp", new int[] {0, 2}),
    };
    OpName[] ops = {small.op("all_reduce"), small.op("broadcast"), small.op("send")};
    TensorList[] tensors = {small.tensors(new long[][] {{8}}, "Float"), small.tensors(new long[][] {{2, 3}}, "Long")};
    List<CollectiveRecord> expected = new ArrayList<>();
    int total = capacity * 3 + 5;
    for (int i = 0; i < total; i++) {
      ProcessGroupHandle pg = groups[i % 2];
      TensorList t = tensors[i % 3 == 0 ? 1 : 0];
      time.set(1_000L * i);
      boolean p2p = i % 3 == 2;
      long handle = p2p ? small.enqueueP2p(pg, ops[2], 1, t, null) : small.enqueue(pg, ops[i % 2], t, t, null);
      assertThat(handle).isEqualTo(i);
      // Every fourth record stays in flight so both states are checked after the wrap.
      boolean complete = i % 4 != 3;
      if (complete) {
        time.set(1_000L * i + 7);
        small.completed(handle);
      }
      expected.add(record(small, handle));
      assertThat(expected.get(i).getState())
          .isEqualTo(complete ? CollectiveState.COMPLETED : CollectiveState.SCHEDULED);
    }

    RecordView view = new RecordView();
    long next = small.nextRecordId();
    assertThat(next).isEqualTo(total);
    for (long id = 0; id < next - capacity; id++) {
      assertThat(small.read(id, view)).as("overwritten record %d", id).isFalse();
      assertThat(small.tryRead(id, view)).isEqualTo(RecordRing.ReadResult.GONE);
    }
    List<CollectiveRecord> window = new ArrayList<>();
    for (long id = next - capacity; id < next; id++) {
      window.add(record(small, id));
    }
    assertThat(window).containsExactlyElementsOf(expected.subList(total - capacity, total));
    assertThat(window).extracting(CollectiveRecord::getRecordId).containsExactly(21L, 22L, 23L, 24L, 25L, 26L, 27L,
        28L);
    assertThat(small.read(next, view)).as("not yet issued").isFalse();
    // Spot-check that the stored copy carries the fields the wrap must not mix up.
    CollectiveRecord r26 = window.get(5);
    assertThat(r26.getProcessGroup()).isEqualTo("0");
    assertThat(r26.getOp()).isEqualTo("send");
    assertThat(r26.getIsP2P()).isTrue();
    assertThat(r26.getTimeCreatedNs()).isEqualTo(26_000);
    assertThat(r26.getTimeCompletedNs()).isEqualTo(26_007);
    assertThat(r26.getTimeoutMs()).isEqualTo(30_000);
  }

  // ---- state transitions ----

  @Test
  void recordMovesFromScheduledToStartedToCompletedWithTheTimeOfEachStep() {
    clock.set(10_000);
    long h = collective();
    CollectiveRecord scheduled = record(h);
    assertThat(scheduled.getState()).isEqualTo(CollectiveState.SCHEDULED);
    assertThat(scheduled.getTimeCreatedNs()).isEqualTo(10_000);
    assertThat(scheduled.getTimeStartedNs()).isZero();
    assertThat(scheduled.getTimeCompletedNs()).isZero();

    clock.set(20_000);
    recorder.started(h);
    assertThat(record(h).getState()).isEqualTo(CollectiveState.STARTED);
    assertThat(record(h).getTimeStartedNs()).isEqualTo(20_000);

    clock.set(30_000);
    recorder.completed(h);
    CollectiveRecord completed = record(h);
    assertThat(completed.getState()).isEqualTo(CollectiveState.COMPLETED);
    assertThat(completed.getTimeCreatedNs()).isEqualTo(10_000);
    assertThat(completed.getTimeStartedNs()).isEqualTo(20_000);
    assertThat(completed.getTimeCompletedNs()).isEqualTo(30_000);
  }

  @Test
  void recordCompletesWithoutAStartedStepWhenTheDeviceGaveNoStartEvent() {
    long h = collective();
    clock.set(5_000_000);
    recorder.completed(h);

    assertThat(record(h).getState()).isEqualTo(CollectiveState.COMPLETED);
    assertThat(record(h).getTimeStartedNs()).isZero();
    assertThat(record(h).getTimeCompletedNs()).isEqualTo(5_000_000);
  }

  @Test
  void lateOrRepeatedTransitionsNeverMoveARecordBack() {
    long h = collective();
    clock.set(2_000_000);
    recorder.completed(h);
    clock.set(3_000_000);
    recorder.started(h);
    recorder.completed(h);

    CollectiveRecord r = record(h);
    assertThat(r.getState()).isEqualTo(CollectiveState.COMPLETED);
    assertThat(r.getTimeStartedNs()).isZero();
    assertThat(r.getTimeCompletedNs()).isEqualTo(2_000_000);
    assertThat(progressOf("0").getLastStartedSeq()).isEqualTo(-1);
    assertThat(progressOf("0").getLastProgressNs()).isEqualTo(2_000_000);
  }

  @Test
  void staleHandleAfterOverwriteIsIgnoredAndLeavesTheNewOccupantAlone() {
    FlightRecorder two = new FlightRecorder(2, clock::get, 0);
    ProcessGroupHandle pg = two.registerProcessGroup("0", "default_pg", WORLD);
    OpName op = two.op("all_reduce");
    TensorList t = two.tensors(new long[][] {{1}}, "Float");
    clock.set(100);
    long stale = two.enqueue(pg, op, t, t, null);
    two.enqueue(pg, op, t, t, null);
    long occupant = two.enqueue(pg, op, t, t, null);
    CollectiveRecord before = record(two, occupant);

    clock.set(999);
    two.started(stale);
    two.completed(stale);

    assertThat(two.read(stale, new RecordView())).isFalse();
    assertThat(record(two, occupant)).isEqualTo(before);
    assertThat(before.getState()).isEqualTo(CollectiveState.SCHEDULED);
    assertThat(before.getCollectiveSeq()).isEqualTo(3);
    ProcessGroupProgress progress = two.progress().get(0);
    assertThat(progress.getLastStartedSeq()).as("the stale handle's seq 1 must not count").isEqualTo(-1);
    assertThat(progress.getLastCompletedSeq()).isEqualTo(-1);
    assertThat(progress.getLastProgressNs()).isZero();
    assertThat(two.lostUpdates()).isZero();
  }

  // ---- what a record refers to ----

  @Test
  void recordCarriesItsTensorsThreadAndInternedStack() {
    List<Frame> frames = List.of(Frame.newBuilder().setName("all_reduce").setFilename("dist.py").setLine(10).build(),
        Frame.newBuilder().setName("train_step").setFilename("train.py").setLine(42).build());
    StackTrace stack = recorder.stack(frames);
    TensorList out = recorder.tensors(new long[][] {{4, 1024}, {2}}, "BFloat16", "Long");

    CollectiveRecord r = record(recorder.enqueue(world, allGather, oneK, out, stack));

    assertThat(r.getOp()).isEqualTo("all_gather");
    assertThat(r.getProcessGroup()).isEqualTo("0");
    assertThat(r.getInputSizesList()).extracting(s -> s.getDimsList()).containsExactly(List.of(1024L));
    assertThat(r.getInputDtypesList()).containsExactly("Float");
    assertThat(r.getOutputSizesList()).extracting(s -> s.getDimsList()).containsExactly(List.of(4L, 1024L),
        List.of(2L));
    assertThat(r.getOutputDtypesList()).containsExactly("BFloat16", "Long");
    assertThat(r.getThreadName()).isEqualTo(Thread.currentThread().getName());
    assertThat(r.getFrameIdsList()).extracting(recorder::frame).containsExactlyElementsOf(frames);
    assertThat(recorder.stack(List.copyOf(frames))).extracting(s -> s.id).isEqualTo(stack.id);
  }
}
