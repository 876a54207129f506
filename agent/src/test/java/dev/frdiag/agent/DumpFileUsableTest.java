package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DumpFileUsableTest {
  @Test
  void aGroupWithNoNameIsLeftOutWithItsRecordsSoTheDaemonTakesTheStream() {
    ProcessGroup named = ProcessGroup.newBuilder().setName("0").addRanks(0).addRanks(1).setGlobalRankStart(0)
        .setGlobalRankStride(1).build();
    ProcessGroup nameless = ProcessGroup.newBuilder().setName("").addRanks(0).setGlobalRankStart(0)
        .setGlobalRankStride(1).build();
    CollectiveRecord onNamed = CollectiveRecord.newBuilder().setProcessGroup("0").setOp("all_reduce")
        .setCollectiveSeq(1).setTimeCreatedNs(1).build();
    CollectiveRecord onNameless = onNamed.toBuilder().setProcessGroup("").build();
    FlightRecorderDump dump = new FlightRecorderDump(Path.of("worker_0.sock"), 0, "2.10", "",
        List.of(named, nameless), List.of(onNamed, onNameless), List.of(), Map.of(), List.of());

    FlightRecorderDump usable = DumpFile.usable(0, 2, dump, List.of());

    assertThat(usable.processGroups()).containsExactly(named);
    assertThat(usable.records()).containsExactly(onNamed);
  }
}
