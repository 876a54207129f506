package dev.frdiag.daemon.registry;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.Shape;
import org.junit.jupiter.api.Test;

/** Kept records share what ranks repeat, and stay equal to what was sent. */
class RecordInternerTest {
  private static CollectiveRecord record(long id, long dim) {
    return CollectiveRecord.newBuilder().setRecordId(id).setProcessGroup("tp0").setCollectiveSeq(id).setOp("all_reduce")
        .setBackend("nccl").setState(CollectiveState.COMPLETED).setThreadName("pt_main_thread")
        .addInputSizes(Shape.newBuilder().addDims(dim).addDims(1)).addOutputSizes(Shape.newBuilder().addDims(dim))
        .addInputDtypes("Float").addOutputDtypes("Float").addFrameIds(3).addFrameIds(4).build();
  }

  /** As the daemon gets it: parsed from the wire, owning every list and string. */
  private static CollectiveRecord fromWire(CollectiveRecord r) throws InvalidProtocolBufferException {
    return CollectiveRecord.parseFrom(r.toByteArray());
  }

  @Test
  void recordsThatRepeatShapesStacksAndNamesShareOneCopyAndStayEqual() throws Exception {
    RecordInterner interner = new RecordInterner();
    CollectiveRecord sentA = fromWire(record(1, 4096));
    CollectiveRecord sentB = fromWire(record(2, 4096));
    assertThat(sentA.getInputSizesList()).isNotSameAs(sentB.getInputSizesList());

    CollectiveRecord a = interner.intern(sentA);
    CollectiveRecord b = interner.intern(sentB);

    assertThat(a).isEqualTo(sentA);
    assertThat(b).isEqualTo(sentB);
    assertThat(b.getInputSizesList()).isSameAs(a.getInputSizesList());
    assertThat(b.getOutputSizesList()).isSameAs(a.getOutputSizesList());
    assertThat(b.getInputDtypesList()).isSameAs(a.getInputDtypesList());
    assertThat(b.getFrameIdsList()).isSameAs(a.getFrameIdsList());
    assertThat(b.getProcessGroup()).isSameAs(a.getProcessGroup());
    assertThat(b.getOp()).isSameAs(a.getOp());
    assertThat(b.getThreadName()).isSameAs(a.getThreadName());
    assertThat(interner.templates()).isEqualTo(1);

    CollectiveRecord other = interner.intern(fromWire(record(3, 8192)));
    assertThat(other.getInputSizes(0).getDims(0)).isEqualTo(8192);
    assertThat(interner.templates()).isEqualTo(2);
  }

  @Test
  void stacksAreSharedApartFromShapesSoTheirCombinationsDoNotMultiply() throws Exception {
    RecordInterner interner = new RecordInterner();
    CollectiveRecord a = interner.intern(fromWire(record(1, 4096)));
    CollectiveRecord b = interner.intern(fromWire(record(2, 8192)));
    CollectiveRecord c = interner.intern(fromWire(record(3, 4096).toBuilder().clearFrameIds().addFrameIds(9).build()));
    assertThat(b.getFrameIdsList()).isSameAs(a.getFrameIdsList());
    assertThat(c.getInputSizesList()).isSameAs(a.getInputSizesList());
    assertThat(c.getFrameIdsList()).containsExactly(9);
    assertThat(interner.templates()).isEqualTo(2);
    assertThat(interner.stacks()).isEqualTo(2);
  }

  @Test
  void theSameStackFrameFromManyRanksIsKeptOnce() throws Exception {
    RecordInterner interner = new RecordInterner();
    Frame sent = Frame.newBuilder().setName("all_reduce").setFilename("torch/distributed/c10d.py").setLine(2501)
        .build();
    Frame a = interner.frame(Frame.parseFrom(sent.toByteArray()));
    Frame b = interner.frame(Frame.parseFrom(sent.toByteArray()));
    assertThat(b).isEqualTo(sent).isSameAs(a);
    assertThat(interner.frame(sent.toBuilder().setLine(2502).build())).isNotSameAs(a);
  }

  @Test
  void aRankThatNeverRepeatsItselfIsKeptAsItCameOnceTheBoundIsReached() throws Exception {
    RecordInterner interner = new RecordInterner();
    for (int i = 0; i < RecordInterner.MAX_DISTINCT; i++) {
      interner.intern(record(i, i));
    }
    assertThat(interner.templates()).isEqualTo(RecordInterner.MAX_DISTINCT);

    CollectiveRecord beyond = fromWire(record(1, -1));
    CollectiveRecord kept = interner.intern(beyond);
    assertThat(kept).isEqualTo(beyond);
    assertThat(kept.getInputSizesList()).isSameAs(beyond.getInputSizesList());
    assertThat(interner.templates()).isEqualTo(RecordInterner.MAX_DISTINCT);
  }
}
