package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.agent.controlplane.Recorder;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.readers.pytorch.DumpReader;
import dev.frdiag.readers.pytorch.FlightRecorderDump;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * One rank's NCCL and generic (gloo) recorders made one ring: groups kept apart, record ids unique and stable from
 * one read to the next.
 */
class RecorderMergeTest {
  private static final Path SOCKET = Path.of("worker_0.sock");

  private final FakeTrainingRanks.Training nccl = new FakeTrainingRanks.Training(0, 4,
      System.currentTimeMillis() - 2_000, 100, 64);

  private FlightRecorderDump gloo() throws Exception {
    return DumpReader.create().parse(FakeWorkerServer.resource("/torch-2.13-cpu/stall_dp_rank2_w4/"
        + "fr_trace_json_rank_0.json"), SOCKET, 0);
  }

  private Map<Recorder, FlightRecorderDump> both(long atMillis) throws Exception {
    Map<Recorder, FlightRecorderDump> dumps = new EnumMap<>(Recorder.class);
    dumps.put(Recorder.NCCL, nccl.dump(atMillis, false, true, SOCKET));
    dumps.put(Recorder.GENERIC, gloo());
    return dumps;
  }

  @Test
  void aSingleRecordersDumpIsPassedThrough() throws Exception {
    FlightRecorderDump gloo = gloo();

    assertThat(new RecorderMerge().merge(Map.of(Recorder.GENERIC, gloo), true)).isSameAs(gloo);
  }

  @Test
  void keepsTheGroupsOfEachRecorderApartAndTheSecondsShareOfAGroupBothUseUnderItsBackend() throws Exception {
    FlightRecorderDump merged = new RecorderMerge().merge(both(System.currentTimeMillis()), true);

    assertThat(merged.records()).extracting(CollectiveRecord::getProcessGroup).containsOnly("0", "0/gloo", "1",
        "3");
    assertThat(merged.records()).filteredOn(r -> r.getProcessGroup().equals("0"))
        .extracting(CollectiveRecord::getBackend).containsOnly("nccl");
    assertThat(merged.progress()).extracting(ProcessGroupProgress::getProcessGroup)
        .containsExactlyInAnyOrder("0", "0/gloo", "1", "3");
    // The gloo share of the world group takes the members the NCCL recorder lists.
    assertThat(merged.processGroup("0/gloo").getRanksList()).containsExactly(0, 1, 2, 3);
    assertThat(merged.records()).hasSize(nccl.dump(System.currentTimeMillis(), false, true, SOCKET).records()
        .size() + 23);
  }

  @Test
  void numbersTheMergedRingOnceAndKeepsTheNumbersOfEntriesSeenBefore() throws Exception {
    RecorderMerge merge = new RecorderMerge();
    long t = System.currentTimeMillis();
    FlightRecorderDump first = merge.merge(both(t), true);
    FlightRecorderDump later = merge.merge(both(t + 1_000), true);

    assertThat(first.records()).extracting(CollectiveRecord::getRecordId).doesNotHaveDuplicates().isSorted();
    assertThat(later.records()).extracting(CollectiveRecord::getRecordId).doesNotHaveDuplicates().isSorted();
    List<CollectiveRecord> glooFirst = first.records().stream().filter(r -> r.getBackend().equals("gloo"))
        .toList();
    List<CollectiveRecord> glooLater = later.records().stream().filter(r -> r.getBackend().equals("gloo"))
        .toList();
    assertThat(glooLater).extracting(CollectiveRecord::getRecordId)
        .isEqualTo(glooFirst.stream().map(CollectiveRecord::getRecordId).toList());
    // Ten more NCCL entries a second later take the next ids.
    assertThat(later.records().get(later.records().size() - 1).getRecordId())
        .isGreaterThan(first.records().get(first.records().size() - 1).getRecordId());
  }
}
