package dev.frdiag.proto;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.InternedFrame;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.RecordBatch;
import dev.frdiag.proto.v1.ReportEnvelope;
import dev.frdiag.proto.v1.ReportSummary;
import dev.frdiag.proto.v1.Shape;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.Verdict;
import org.junit.jupiter.api.Test;

class ContractRoundTripTest {

  @Test
  void everyRankMessageSurvivesTheWire() throws InvalidProtocolBufferException {
    ProcessGroup tp = ProcessGroup.newBuilder()
        .setName("tp0").setDesc("TENSOR_MODEL_PARALLEL_GROUP")
        .addRanks(8).addRanks(9).addRanks(10).addRanks(11)
        .setGlobalRankStart(8).setGlobalRankStride(1).setLocalId("3").build();
    RankMessage hello = RankMessage.newBuilder().setHello(Hello.newBuilder()
        .setIdentity(RankIdentity.newBuilder().setJobId("job-1").setGlobalRank(9).setWorldSize(16)
            .setLocalRank(1).setHostname("node01").setPid(4242).setCudaDevice(1)
            .setFrdiagVersion("0.1.0").setFrameworkVersion("torch 2.8.0").setNcclVersion("2.27.3")
            .setGpuBusId("0000:1a:00.0"))
        .addProcessGroups(tp).setRingCapacity(2000).setDroppedRecords(3)).build();
    CollectiveRecord record = CollectiveRecord.newBuilder()
        .setRecordId(77).setProcessGroup("tp0").setCollectiveSeq(12).setOpId(14).setOp("_all_gather_base")
        .setPeer(-1).addInputSizes(Shape.newBuilder().addDims(4).addDims(1024))
        .addOutputSizes(Shape.newBuilder().addDims(16).addDims(1024))
        .addInputDtypes("BFloat16").addOutputDtypes("BFloat16").setState(CollectiveState.STARTED)
        .setTimeCreatedNs(1_700_000_000_123_456_789L).setTimeStartedNs(1_700_000_000_223_456_789L)
        .setTimeoutMs(600_000).setThreadName("python3").setThreadId("140213").addFrameIds(1).addFrameIds(2)
        .setCommsId(CommsId.of("tp0", 12, false, CommsId.layoutOf(new int[] {8, 9, 10, 11})))
        .setDurationMs(1.5).setBackend("nccl").build();
    RankMessage batch = RankMessage.newBuilder().setRecords(RecordBatch.newBuilder().addRecords(record)
        .addFrames(InternedFrame.newBuilder().setId(1)
            .setFrame(Frame.newBuilder().setName("forward").setFilename("model.py").setLine(88)))
        .setDroppedRecords(3)).build();
    RankMessage heartbeat = RankMessage.newBuilder().setHeartbeat(Heartbeat.newBuilder().setSentAtNs(5)
        .addProgress(ProcessGroupProgress.newBuilder().setProcessGroup("tp0").setLastEnqueuedSeq(12)
            .setLastStartedSeq(12).setLastCompletedSeq(11).setLastEnqueuedP2PSeq(-1)
            .setLastCompletedP2PSeq(-1).setLastProgressNs(4))).build();
    RankMessage event = RankMessage.newBuilder().setEvent(RankEvent.newBuilder()
        .setKind(RankEvent.Kind.WATCHDOG_TIMEOUT).setProcessGroup("tp0").setSeq(12).setOp("all_gather")
        .setMessage("Watchdog caught collective operation timeout").setLastEnqueuedSeq(12)
        .setLastCompletedSeq(11)).build();

    for (RankMessage message : new RankMessage[] {hello, batch, heartbeat, event}) {
      assertThat(RankMessage.parseFrom(message.toByteArray())).isEqualTo(message);
    }
  }

  @Test
  void daemonMessagesAndReportsSurviveTheWire() throws InvalidProtocolBufferException {
    DaemonMessage request = DaemonMessage.newBuilder()
        .setDumpRequest(DumpRequest.newBuilder().setRequestId(9).setReason("stall").setDeadlineMs(2000)).build();
    assertThat(DaemonMessage.parseFrom(request.toByteArray())).isEqualTo(request);

    ReportEnvelope report = ReportEnvelope.newBuilder().setSummary(ReportSummary.newBuilder()
        .setReportId("job-1-000001").setJobId("job-1").setVerdict(Verdict.HANG).setSymptom(Symptom.GPU_STALL)
        .addCulpritRanks(5).setCreatedAtMs(1).setHeadline("rank 5 ..."))
        .setReportJson("{\"schema\":\"frdiag.report/v1\"}").build();
    assertThat(ReportEnvelope.parseFrom(report.toByteArray())).isEqualTo(report);
  }

  @Test
  void unsetFieldsReadAsNotReported() throws InvalidProtocolBufferException {
    CollectiveRecord empty = CollectiveRecord.parseFrom(new byte[0]);
    assertThat(empty.getState()).isEqualTo(CollectiveState.COLLECTIVE_STATE_UNSPECIFIED);
    assertThat(empty.getTimeStartedNs()).isZero();
    assertThat(empty.getBackend()).isEmpty();
  }
}
