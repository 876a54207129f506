package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PgStatusTest {

  private static ProcessGroup group(String name, int... ranks) {
    ProcessGroup.Builder g = ProcessGroup.newBuilder().setName(name);
    for (int r : ranks) {
      g.addRanks(r);
    }
    return g.build();
  }

  private static ProcessGroupProgress status(String group, long enqueued, long completed) {
    return ProcessGroupProgress.newBuilder().setProcessGroup(group).setLastEnqueuedSeq(enqueued)
        .setLastStartedSeq(-1).setLastCompletedSeq(completed).setLastEnqueuedP2PSeq(-1).setLastCompletedP2PSeq(-1)
        .build();
  }

  private static CollectiveRecord record(String group, boolean p2p, long collectiveSeq, long p2pSeq) {
    return CollectiveRecord.newBuilder().setProcessGroup(group).setOp(p2p ? "send" : "all_reduce").setIsP2P(p2p)
        .setCollectiveSeq(collectiveSeq).setP2PSeq(p2pSeq).setState(CollectiveState.SCHEDULED).setTimeCreatedNs(1)
        .build();
  }

  @Test
  void aPipelineGroupsStatusIsReadAsP2pSeqsAndATensorGroupsAsCollectiveSeqs() {
    // As in the real Megatron dumps: the pipeline group's status (11986, 11983) counts sends and recvs.
    FlightRecorderDump rank0 = new FlightRecorderDump(Path.of("_dump_0"), 0, "2.9", "2.27.3",
        List.of(group("43", 0, 12), group("35", 0, 1)),
        List.of(record("43", true, 26, 11984), record("43", true, 26, 11986), record("35", false, 39407, 0)),
        List.of(status("43", 11986, 11983), status("35", 39416, 39406)), Map.of(), List.of());
    // Rank 12 is idle in the pipeline group; its numbers are told apart by rank 0's records of the same group.
    FlightRecorderDump rank12 = new FlightRecorderDump(Path.of("_dump_12"), 12, "2.9", "2.27.3",
        List.of(group("43", 0, 12)), List.of(), List.of(status("43", 11986, 11986)), Map.of(), List.of());
    PgStatus.SeqRanges ranges = PgStatus.seqRanges(List.of(rank0, rank12));

    List<ProcessGroupProgress> p0 = PgStatus.normalized(rank0, ranges);
    assertThat(p0.get(0).getLastEnqueuedP2PSeq()).isEqualTo(11986);
    assertThat(p0.get(0).getLastCompletedP2PSeq()).isEqualTo(11983);
    assertThat(p0.get(0).getLastEnqueuedSeq()).isEqualTo(-1);
    assertThat(p0.get(1)).isEqualTo(status("35", 39416, 39406));

    ProcessGroupProgress p12 = PgStatus.normalized(rank12, ranges).get(0);
    assertThat(p12.getLastCompletedP2PSeq()).isEqualTo(11986);
    assertThat(p12.getLastCompletedSeq()).isEqualTo(-1);

    // Alone, rank 12's dump says nothing of its group's kind: its status stays as PyTorch wrote it.
    assertThat(PgStatus.normalized(rank12, PgStatus.seqRanges(List.of(rank12)))).containsExactly(
        status("43", 11986, 11986));
  }
}
