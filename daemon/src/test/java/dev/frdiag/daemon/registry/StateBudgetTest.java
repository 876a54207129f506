package dev.frdiag.daemon.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.ProcessGroupProgress;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What clients make the daemon hold is counted in bytes, refused past each job's and the daemon's limit, and given back. */
class StateBudgetTest {
  private static final long S = 1_000_000_000L;
  private static final long MIB = 1024 * 1024;

  private static ProcessGroup group(String name, int members) {
    ProcessGroup.Builder g = ProcessGroup.newBuilder().setName(name).setGlobalRankStart(0).setGlobalRankStride(1);
    for (int m = 0; m < members; m++) {
      g.addRanks(m);
    }
    return g.build();
  }

  private static RankIdentity rank(String job, int rank, int worldSize) {
    return RankIdentity.newBuilder().setJobId(job).setGlobalRank(rank).setWorldSize(worldSize).setPid(1).build();
  }

  private static Job connected(JobRegistry registry, String job, int worldSize, long nowNanos) {
    Job j = registry.getOrCreate(job, worldSize, 0, nowNanos);
    j.attach(rank(job, 0, worldSize), List.of(), request -> { }, "s", 0, nowNanos, 0);
    return j;
  }

  @Test
  void processGroupsPastTheJobsLimitAreRefusedWholeAndCounted() {
    JobRegistry registry = new JobRegistry(16, Limits.builder().maxJobStateBytes(2 * MIB).build());
    Job job = connected(registry, "j", 1 << 20, 0);
    job.addGroups(0, "s", List.of(group("a", 110_000)), 0);

    assertThatThrownBy(() -> job.addGroups(0, "s", List.of(group("b", 110_000), group("c", 10)), 0))
        .isInstanceOf(LimitExceededException.class)
        .hasMessageStartingWith("job j would hold ")
        .hasMessageEndingWith(" bytes with the process groups just sent, more than its limit of 2097152 bytes "
            + "(--max-job-state-bytes); refused");
    assertThat(job.knowsGroup(0, "b")).isFalse();
    assertThat(job.knowsGroup(0, "c")).as("nothing of a refused message is kept").isFalse();
    assertThat(registry.budget().refusals()).isEqualTo(Map.of(StateBudget.State.GROUPS,
        Map.of(StateBudget.Scope.JOB, 1L)));
    assertThat(job.stateBytes()).isEqualTo(registry.budget().used()).isBetween(1_000_000L, 2 * MIB);
  }

  @Test
  void theDaemonsLimitHoldsAcrossJobsAndAForgottenJobGivesItsBytesBack() {
    JobRegistry registry = new JobRegistry(16, Limits.builder().maxStateBytes(3 * MIB).maxJobStateBytes(2 * MIB)
        .jobIdleExpiry(Duration.ofMinutes(1)).build());
    Job first = connected(registry, "first", 1 << 20, 0);
    first.addGroups(0, "s", List.of(group("a", 160_000)), 0);
    Job second = connected(registry, "second", 1 << 20, 0);

    assertThatThrownBy(() -> second.addGroups(0, "s", List.of(group("a", 160_000)), 0))
        .isInstanceOf(LimitExceededException.class)
        .hasMessageStartingWith("the daemon would hold ")
        .hasMessageEndingWith(" bytes of client state with the process groups just sent for job second, more than "
            + "its limit of 3145728 bytes (--max-state-bytes); refused");
    assertThat(registry.budget().refusals().get(StateBudget.State.GROUPS)).containsEntry(StateBudget.Scope.DAEMON, 1L);

    first.lost(0, "s", 1 * S);
    assertThat(registry.expireIdle(2 * 60 * S)).containsExactly("first");
    assertThat(registry.budget().used()).isEqualTo(second.stateBytes());
    second.addGroups(0, "s", List.of(group("a", 160_000)), 2 * 60 * S);
    assertThat(second.knowsGroup(0, "a")).isTrue();
  }

  @Test
  void idleJobsAreForgottenOldestFirstWhileTheDaemonIsNineTenthsFull() {
    JobRegistry registry = new JobRegistry(16, Limits.builder().maxStateBytes(4 * MIB).maxJobStateBytes(4 * MIB)
        .build());
    Job older = connected(registry, "older", 1 << 20, 0);
    older.addGroups(0, "s", List.of(group("a", 170_000)), 0);
    older.lost(0, "s", 1 * S);
    Job newer = connected(registry, "newer", 1 << 20, 1 * S);
    newer.addGroups(0, "s", List.of(group("a", 170_000)), 1 * S);
    newer.lost(0, "s", 2 * S);

    registry.getOrCreate("new", 1, 0, 3 * S);

    assertThat(registry.find("older")).as("idle longest, and forgotten for the room").isEmpty();
    assertThat(registry.find("newer")).isPresent();
    assertThat(registry.evictions()).isEqualTo(1);
    assertThat(registry.budget().used()).isLessThan(4 * MIB / 10 * 9);
  }

  @Test
  void progressEventsAndContextAreCountedAndGivenBackWhenARankRestarts() {
    JobRegistry registry = new JobRegistry(16, Limits.defaults());
    Job job = registry.getOrCreate("j", 1, 0, 0);
    ProcessGroup world = group("0", 1);
    job.attach(rank("j", 0, 1), List.of(world), request -> { }, "s", 0, 0, 0);
    long attached = job.stateBytes();

    job.heartbeat(0, "s", List.of(ProcessGroupProgress.newBuilder().setProcessGroup("0").setLastEnqueuedSeq(1)
        .build(), ProcessGroupProgress.newBuilder().setProcessGroup("never-announced").build()), 0, 1, false, 0, 0);
    long withProgress = job.stateBytes();
    assertThat(withProgress - attached).as("one entry: a group never announced is not kept")
        .isEqualTo(StateBytes.progress("0"));
    job.heartbeat(0, "s", List.of(ProcessGroupProgress.newBuilder().setProcessGroup("0").setLastEnqueuedSeq(2)
        .build()), 0, 2, false, 0, 0);
    assertThat(job.stateBytes()).as("a newer heartbeat replaces, adds nothing").isEqualTo(withProgress);

    RankEvent event = RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_TIMEOUT).setMessage("timeout").build();
    for (int i = 0; i < RankState.MAX_EVENTS + 10; i++) {
      job.event(0, "s", event, 0);
    }
    assertThat(job.stateBytes() - withProgress).as("the newest %d events", RankState.MAX_EVENTS)
        .isEqualTo(RankState.MAX_EVENTS * StateBytes.message(event));

    NodeContext context = NodeContext.newBuilder().setJobId("j").setHostname("h")
        .addFindings(ContextFinding.newBuilder().setDetail("x".repeat(1000))).build();
    long beforeContext = job.stateBytes();
    job.context(context, 0);
    job.context(context, 0);
    assertThat(job.stateBytes() - beforeContext).as("a node's newer post replaces its older one")
        .isEqualTo(StateBytes.context(context));

    // A new process for the rank: its progress is history, and given back.
    job.lost(0, "s", 1 * S);
    job.attach(rank("j", 0, 1).toBuilder().setPid(2).build(), List.of(world), request -> { }, "t", 0, 2 * S, 0);
    assertThat(job.stateBytes()).isEqualTo(withProgress - StateBytes.progress("0")
        + RankState.MAX_EVENTS * StateBytes.message(event) + StateBytes.context(context));
    assertThat(registry.budget().used()).isEqualTo(job.stateBytes());
  }

  @Test
  void nodeContextWaitingForItsJobIsBoundedAltogetherAndMovesToTheJob() {
    JobRegistry registry = new JobRegistry(16, Limits.builder().maxContextBytesPerJob(256 * 1024).build());
    NodeContext.Builder post = NodeContext.newBuilder().setHostname("h")
        .addFindings(ContextFinding.newBuilder().setDetail("x".repeat(70_000)));
    registry.context(post.setJobId("a").build(), 0);
    assertThatThrownBy(() -> registry.context(post.setJobId("b").build(), 0))
        .isInstanceOf(LimitExceededException.class)
        .hasMessageStartingWith("the node context waiting for jobs no rank has connected for would hold ")
        .hasMessageEndingWith(" bytes with the node context just sent, more than its limit of 262144 bytes "
            + "(--max-context-bytes); refused");

    Job a = registry.getOrCreate("a", 1, 0, 0);
    assertThat(a.stateBytes()).isEqualTo(StateBytes.context(post.setJobId("a").build()));
    assertThat(registry.budget().used()).as("moved, not counted twice").isEqualTo(a.stateBytes());
    registry.context(post.setJobId("b").build(), 0);
  }
}
