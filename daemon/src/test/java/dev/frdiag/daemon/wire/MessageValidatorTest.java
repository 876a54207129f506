package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.proto.CommsId;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.NicBinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.proto.v1.RankIdentity;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

/** Every rule the daemon applies to what a rank sends, with the description the rank sees in its stream's status. */
class MessageValidatorTest {
  private static final String JOB_ID_RULE = ": use 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit";

  private static RankIdentity identity(String job, int rank, int worldSize) {
    return RankIdentity.newBuilder().setJobId(job).setGlobalRank(rank).setWorldSize(worldSize).setHostname("node0")
        .setPid(1).build();
  }

  private static ProcessGroup group(String name, int... ranks) {
    ProcessGroup.Builder g = ProcessGroup.newBuilder().setName(name);
    for (int r : ranks) {
      g.addRanks(r);
    }
    if (ranks.length > 0) {
      CommsId.GroupLayout layout = CommsId.layoutOf(ranks);
      g.setGlobalRankStart(layout.start()).setGlobalRankStride(layout.stride());
    }
    return g.build();
  }

  private static Hello hello(RankIdentity id, ProcessGroup... groups) {
    return Hello.newBuilder().setIdentity(id).addAllProcessGroups(List.of(groups)).build();
  }

  private static void refused(ThrowingCallable check, String description) {
    assertThatThrownBy(check).isExactlyInstanceOf(IllegalArgumentException.class).hasMessage(description);
  }

  private static void accepted(ThrowingCallable check) {
    assertThatCode(check).doesNotThrowAnyException();
  }

  @Test
  void anEventMustSayWhatHappenedBecauseItMayOpenAnIncident() {
    for (RankEvent.Kind kind : List.of(RankEvent.Kind.WATCHDOG_TIMEOUT, RankEvent.Kind.COMM_ERROR,
        RankEvent.Kind.CUDA_ERROR, RankEvent.Kind.WATCHDOG_STUCK)) {
      accepted(() -> MessageValidator.event(RankEvent.newBuilder().setKind(kind).build()));
    }
    String kinds = ": use WATCHDOG_TIMEOUT, COMM_ERROR, CUDA_ERROR or WATCHDOG_STUCK";
    refused(() -> MessageValidator.event(RankEvent.getDefaultInstance()), "rank event kind is not set" + kinds);
    refused(() -> MessageValidator.event(RankEvent.newBuilder().setKindValue(99).build()),
        "rank event kind 99 is unknown" + kinds);
  }

  @Test
  void helloNeedsAnIdentity() {
    refused(() -> MessageValidator.hello(Hello.getDefaultInstance()), "Hello has no identity");
  }

  @Test
  void jobIdIsOneTo128SafeCharactersStartingWithALetterOrDigit() {
    accepted(() -> MessageValidator.hello(hello(identity("a", 0, 1))));
    accepted(() -> MessageValidator.hello(hello(identity("Job-1.run_2", 0, 1))));
    accepted(() -> MessageValidator.hello(hello(identity("j".repeat(128), 0, 1))));
    refused(() -> MessageValidator.hello(hello(identity("", 0, 1))), "invalid job_id ''" + JOB_ID_RULE);
    refused(() -> MessageValidator.hello(hello(identity("../etc", 0, 1))), "invalid job_id '../etc'" + JOB_ID_RULE);
    refused(() -> MessageValidator.hello(hello(identity("-job", 0, 1))), "invalid job_id '-job'" + JOB_ID_RULE);
    refused(() -> MessageValidator.hello(hello(identity("job 1", 0, 1))), "invalid job_id 'job 1'" + JOB_ID_RULE);
    refused(() -> MessageValidator.hello(hello(identity("j".repeat(129), 0, 1))),
        "invalid job_id '" + "j".repeat(64) + "…'" + JOB_ID_RULE);
  }

  @Test
  void worldSizeIsOneToAMillionRanks() {
    accepted(() -> MessageValidator.hello(hello(identity("job", 0, 1))));
    accepted(() -> MessageValidator.hello(hello(identity("job", 0, 1 << 20))));
    refused(() -> MessageValidator.hello(hello(identity("job", 0, 0))), "world_size 0 is outside 1..1048576");
    refused(() -> MessageValidator.hello(hello(identity("job", 0, -3))), "world_size -3 is outside 1..1048576");
    refused(() -> MessageValidator.hello(hello(identity("job", 0, (1 << 20) + 1))),
        "world_size 1048577 is outside 1..1048576");
  }

  @Test
  void schedulerNamesAreFewAndShort() {
    Hello named = hello(identity("job", 0, 1)).toBuilder().putScheduler("slurm.job_id", "4242")
        .putScheduler("kubernetes.namespace", "").build();
    accepted(() -> MessageValidator.hello(named));
    refused(() -> MessageValidator.hello(named.toBuilder().putScheduler("k".repeat(65), "v").build()),
        "scheduler key '" + "k".repeat(64) + "…' must be 1-64 characters");
    refused(() -> MessageValidator.hello(named.toBuilder().putScheduler("slurm.job_name", "x".repeat(257)).build()),
        "scheduler value of 'slurm.job_name' is longer than 256 characters");
    Hello.Builder many = named.toBuilder();
    for (int i = 0; i < 15; i++) {
      many.putScheduler("key" + i, "v");
    }
    refused(() -> MessageValidator.hello(many.build()), "scheduler has 17 entries, more than 16");
  }

  @Test
  void globalRankLiesInsideTheWorld() {
    accepted(() -> MessageValidator.hello(hello(identity("job", 3, 4))));
    refused(() -> MessageValidator.hello(hello(identity("job", 4, 4))), "global_rank 4 is outside 0..3");
    refused(() -> MessageValidator.hello(hello(identity("job", -1, 4))), "global_rank -1 is outside 0..3");
  }

  @Test
  void helloChecksTheGroupsItAnnounces() {
    accepted(() -> MessageValidator.hello(hello(identity("job", 1, 4), group("0", 0, 1, 2, 3), group("1", 1, 3))));
    refused(() -> MessageValidator.hello(hello(identity("job", 1, 4), group("", 0, 1))),
        "a process group has an empty name");
  }

  @Test
  void atMost4096GroupsPerMessage() {
    RankIdentity id = identity("job", 0, 1);
    List<ProcessGroup> most = new ArrayList<>(Collections.nCopies(4096, group("0", 0)));
    accepted(() -> MessageValidator.groups(most, id));
    most.add(group("0", 0));
    refused(() -> MessageValidator.groups(most, id), "4097 process groups is more than 4096");
  }

  @Test
  void groupHasANameAndMembers() {
    RankIdentity id = identity("job", 0, 4);
    refused(() -> MessageValidator.groups(List.of(group("", 0)), id), "a process group has an empty name");
    refused(() -> MessageValidator.groups(List.of(group("tp")), id), "process group 'tp' has no members");
  }

  @Test
  void membersLieInsideTheWorld() {
    RankIdentity id = identity("job", 0, 4);
    refused(() -> MessageValidator.groups(List.of(group("tp", 0, 4)), id),
        "process group 'tp' has member 4 outside world size 4");
    refused(() -> MessageValidator.groups(List.of(ProcessGroup.newBuilder().setName("tp").addRanks(0).addRanks(-1)
        .build()), id), "process group 'tp' has member -1 outside world size 4");
  }

  @Test
  void memberListedTwiceIsRefused() {
    RankIdentity id = identity("job", 0, 4);
    refused(() -> MessageValidator.groups(List.of(ProcessGroup.newBuilder().setName("tp").addRanks(0).addRanks(1)
        .addRanks(1).setGlobalRankStride(1).build()), id),
        "process group 'tp': global rank 1 appears twice in the group");
  }

  @Test
  void startAndStrideMatchTheMembers() {
    RankIdentity id = identity("job", 0, 8);
    accepted(() -> MessageValidator.groups(List.of(group("dp", 0, 2, 4, 6)), id));
    accepted(() -> MessageValidator.groups(List.of(group("odd", 0, 1, 5)), id));
    refused(() -> MessageValidator.groups(List.of(group("dp", 0, 2, 4, 6).toBuilder().setGlobalRankStride(1)
        .build()), id), "process group 'dp' says start/stride 0/1 but its members give 0/2");
    refused(() -> MessageValidator.groups(List.of(group("dp", 0, 2, 4, 6).toBuilder().setGlobalRankStart(2)
        .build()), id), "process group 'dp' says start/stride 2/2 but its members give 0/2");
  }

  @Test
  void rankBelongsToEveryGroupItAnnounces() {
    refused(() -> MessageValidator.groups(List.of(group("tp", 2, 3)), identity("job", 1, 4)),
        "rank 1 is not a member of process group 'tp' it announced");
  }

  @Test
  void aGroupTheJobHeldBeforeIsStillCheckedForThisRankAndThisWorld() {
    ProcessGroup dp = group("dp", 1, 3, 5, 7);
    accepted(() -> MessageValidator.groups(List.of(dp), identity("job", 5, 8), g -> true));
    refused(() -> MessageValidator.groups(List.of(dp), identity("job", 4, 8), g -> true),
        "rank 4 is not a member of process group 'dp' it announced");
    refused(() -> MessageValidator.groups(List.of(dp), identity("job", 9, 10), g -> true),
        "rank 9 is not a member of process group 'dp' it announced");
    refused(() -> MessageValidator.groups(List.of(dp), identity("job", 1, 6), g -> true),
        "process group 'dp' has member 7 outside world size 6");
    // Members that are no progression are checked in full whatever the job held.
    refused(() -> MessageValidator.groups(List.of(group("odd", 0, 1, 5)), identity("job", 1, 4), g -> true),
        "process group 'odd' has member 5 outside world size 4");
  }

  @Test
  void nodeContextNamesAValidJobAndHost() {
    NodeContext ok = NodeContext.newBuilder().setJobId("job").setHostname("h".repeat(255)).build();
    accepted(() -> MessageValidator.context(ok));
    refused(() -> MessageValidator.context(ok.toBuilder().setJobId("../x").build()), "invalid job_id '../x'");
    refused(() -> MessageValidator.context(ok.toBuilder().setHostname("").build()),
        "hostname must be 1-255 characters");
    refused(() -> MessageValidator.context(ok.toBuilder().setHostname("h".repeat(256)).build()),
        "hostname must be 1-255 characters");
  }

  @Test
  void nodeContextCarriesAtMost1000Findings() {
    NodeContext.Builder node = NodeContext.newBuilder().setJobId("job").setHostname("node0");
    for (int i = 0; i < 1000; i++) {
      node.addFindings(ContextFinding.getDefaultInstance());
    }
    accepted(() -> MessageValidator.context(node.build()));
    node.addFindings(ContextFinding.getDefaultInstance());
    refused(() -> MessageValidator.context(node.build()), "1001 findings is more than 1000");
  }

  @Test
  void nodeContextNamesAtMost1024NicBindingsAndRanks() {
    NodeContext.Builder node = NodeContext.newBuilder().setJobId("job").setHostname("node0");
    for (int i = 0; i < 1024; i++) {
      node.addNics(NicBinding.newBuilder().setRank(i).setNic("mlx5_" + i)).addRanks(i);
    }
    accepted(() -> MessageValidator.context(node.build()));
    refused(() -> MessageValidator.context(node.build().toBuilder().addNics(NicBinding.getDefaultInstance()).build()),
        "1025 NIC bindings is more than 1024");
    refused(() -> MessageValidator.context(node.build().toBuilder().addRanks(5000).build()),
        "1025 ranks on one node is more than 1024");
  }

  @Test
  void longValuesAreCutAt64CharactersInMessages() {
    assertThat(MessageValidator.abbreviate("x".repeat(64))).isEqualTo("x".repeat(64));
    assertThat(MessageValidator.abbreviate("x".repeat(65))).isEqualTo("x".repeat(64) + "…");
  }
}
