package dev.frdiag.daemon.registry;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.proto.v1.CollectiveRecord;
import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.Heartbeat;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.ProcessGroupUpdate;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RecordBatch;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * What the budget counts is no less than what the heap really holds: each kind of state a client can grow, taken
 * in as parsed from the wire, measured as the heap's growth once collected, against the bytes the job is charged.
 */
class StateBytesTest {
  private static final long LIMIT = 1L << 40;

  /** The heap in use once garbage is collected. */
  private static long heapInUse() {
    long used = Long.MAX_VALUE;
    // A few collections, keeping the least: one can leave what a finalizer or a reference queue frees next.
    for (int i = 0; i < 4; i++) {
      System.gc();
      used = Math.min(used, ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
    }
    return used;
  }

  /** The heap a job holds once {@code feed} has run on it, and the bytes it was charged. */
  private static long[] measured(int worldSize, Consumer<Job> feed) {
    JobRegistry registry = new JobRegistry(512, Limits.builder().maxStateBytes(LIMIT).maxJobStateBytes(LIMIT)
        .build());
    long before = heapInUse();
    Job job = registry.getOrCreate("j", worldSize, 0, 0);
    feed.accept(job);
    long retained = heapInUse() - before;
    long charged = job.stateBytes();
    assertThat(registry.find("j")).containsSame(job);
    return new long[] {retained, charged};
  }

  private static <T extends com.google.protobuf.Message> T wire(T message) {
    try {
      @SuppressWarnings("unchecked")
      T parsed = (T) message.getParserForType().parseFrom(message.toByteArray());
      return parsed;
    } catch (InvalidProtocolBufferException e) {
      throw new AssertionError(e);
    }
  }

  private static RankIdentity identity(int rank, int worldSize) {
    return RankIdentity.newBuilder().setJobId("j").setGlobalRank(rank).setWorldSize(worldSize)
        .setHostname("node-" + rank / 8).setPid(10_000 + rank).build();
  }

  @Test
  void groupsOfManyMembers() {
    long[] m = measured(1 << 20, job -> {
      job.attach(wire(identity(0, 1 << 20)), List.of(), request -> { }, "s", 0, 0, 0);
      ProcessGroup.Builder members = ProcessGroup.newBuilder().setGlobalRankStart(0).setGlobalRankStride(1);
      for (int r = 0; r < 500_000; r++) {
        members.addRanks(r);
      }
      for (int g = 0; g < 20; g++) {
        ProcessGroupUpdate update = wire(ProcessGroupUpdate.newBuilder().addProcessGroups(members.setName("g" + g))
            .build());
        job.addGroups(0, "s", update.getProcessGroupsList(), 0);
      }
    });
    assertThat(m[0]).as("retained %d, charged %d", m[0], m[1]).isPositive().isLessThanOrEqualTo(m[1]);
  }

  @Test
  void ranksEachWithItsWindowAndGroup() {
    long[] m = measured(1 << 20, job -> {
      for (int r = 0; r < 20_000; r++) {
        ProcessGroup own = ProcessGroup.newBuilder().setName("own").addRanks(r).setGlobalRankStart(r)
            .setGlobalRankStride(1).build();
        Hello hello = wire(Hello.newBuilder().setIdentity(identity(r, 1 << 20)).addProcessGroups(own).build());
        job.attach(hello.getIdentity(), hello.getProcessGroupsList(), request -> { }, "s" + r, 0, 0, 0);
        RecordBatch batch = wire(RecordBatch.newBuilder().addRecords(CollectiveRecord.newBuilder().setRecordId(1)
            .setProcessGroup("own").setOp("all_reduce").setCollectiveSeq(1).setState(CollectiveState.STARTED)
            .setTimeCreatedNs(1)).build());
        job.records(r, "s" + r, batch, new TemplateTable(), 0);
      }
    });
    assertThat(m[0]).as("retained %d, charged %d", m[0], m[1]).isPositive().isLessThanOrEqualTo(m[1]);
  }

  @Test
  void progressOnThousandsOfGroups() {
    String prefix = "g".repeat(95);
    long[] m = measured(64, job -> {
      for (int r = 0; r < 64; r++) {
        Hello.Builder hello = Hello.newBuilder().setIdentity(identity(r, 64));
        Heartbeat.Builder heartbeat = Heartbeat.newBuilder().setSentAtNs(1);
        for (int g = 0; g < 1000; g++) {
          String name = prefix + String.format("%05d", g);
          hello.addProcessGroups(ProcessGroup.newBuilder().setName(name).addRanks(r).setGlobalRankStart(r)
              .setGlobalRankStride(1));
          heartbeat.addProgress(ProcessGroupProgress.newBuilder().setProcessGroup(name).setLastEnqueuedSeq(g)
              .setLastCompletedSeq(g - 1));
        }
        Hello parsed = wire(hello.build());
        job.attach(parsed.getIdentity(), parsed.getProcessGroupsList(), request -> { }, "s" + r, 0, 0, 0);
        job.heartbeat(r, "s" + r, wire(heartbeat.build()).getProgressList(), 0, 1, false, 0, 0);
      }
    });
    assertThat(m[0]).as("retained %d, charged %d", m[0], m[1]).isPositive().isLessThanOrEqualTo(m[1]);
  }

  @Test
  void nodeContextOfManyFindings() {
    long[] m = measured(1, job -> {
      List<NodeContext> posts = new ArrayList<>();
      for (int host = 0; host < 40; host++) {
        NodeContext.Builder post = NodeContext.newBuilder().setJobId("j").setHostname("node-" + host);
        for (int f = 0; f < 1000; f++) {
          // Half of them as small as a finding gets with every text field set: the objects, not the text, count.
          post.addFindings(f % 2 == 0
              ? ContextFinding.newBuilder().setDetail("IB status 12 on mlx5_" + f + " " + "x".repeat(200))
                  .setSource("nccl.log:" + f).build()
              : ContextFinding.newBuilder().setHost("h").setNic("n").setPeer("p").setDetail("d").setSource("s")
                  .build());
        }
        posts.add(wire(post.build()));
      }
      posts.forEach(p -> job.context(p, 0));
    });
    assertThat(m[0]).as("retained %d, charged %d", m[0], m[1]).isPositive().isLessThanOrEqualTo(m[1]);
  }
}
